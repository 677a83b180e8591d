"""The safetensors format written and read with numpy alone (8-byte little-endian header length, a
JSON header with "__metadata__", the raw little-endian data), as nn/safetensors.h reads it: the
converters' output files and their tests' input. Float32 only, which is all they exchange."""
import json
import os
import struct

import numpy as np


def write_safetensors(path, tensors, metadata):
    """tensors: [(name, array)] written as F32 in this order; metadata: {str: str}. Atomic."""
    header, offset, blobs = {"__metadata__": metadata}, 0, []
    for name, value in tensors:
        data = np.ascontiguousarray(value, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(np.shape(value)), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # data section 8-byte aligned, as the safetensors library does
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
    os.replace(tmp, path)


def read_safetensors(path):
    """({name: float32 array}, metadata) of a file of F32 tensors."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, entry in header.items():
        if entry["dtype"] != "F32":
            raise ValueError(f"{path}: tensor '{name}': expected dtype F32, found {entry['dtype']}")
        begin, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(data[8 + n + begin:8 + n + end], "<f4").reshape(entry["shape"])
    return tensors, metadata
