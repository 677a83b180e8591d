// Note [per-ISA loops]: the library is compiled for baseline x86-64 (SSE2), so one binary runs on
// every x86-64 CPU. The few loops of Gantry's own whose speed depends on the vector width (blocked
// batch norm, Adam, the unary elementwise ops, the bf16 conversions of elementwise ops, upfirdn2d's
// plane filter) are compiled once more per wider ISA with the GANTRY_TARGET_* attributes,
// always_inline bodies being instantiated into each, and picked at run time by vector_isa(). Not
// target_clones: its ifunc resolver runs while the dynamic loader relocates the executable, before
// a sanitizer's runtime has started, and crashes the TSan and ASan builds at load. Not whole files built with -mavx512f
// either: the inline and template functions they instantiate would be emitted with AVX-512 code
// under shared (COMDAT) names, and the linker may keep those copies for the rest of the program,
// which then faults on an AVX2-only CPU.
//
// The choice does not change results: the files holding such loops turn off floating-point
// contraction (AVX-512F has FMA instructions, and a fused multiply-add rounds once where the
// baseline build rounds twice), and the loops vectorise only across independent lanes (channels
// of a block, output pixels), never by reassociating a sum, so every value is computed by the
// same operations in the same order at any width. tests/unit/test_vector_isa.cpp checks it bit
// for bit.
//
// Note [CPU ISA limit]: GANTRY_MAX_CPU_ISA=NAME runs the process as a CPU without the wider
// instruction sets would, so one machine can run what another computes (CI runs the labels that
// compare runs under AVX2 on AVX-512 machines). Gantry's per-ISA loops then take at most that
// width, and oneDNN gets the same limit (dnnl_set_max_cpu_isa, before its first use) unless
// ONEDNN_MAX_CPU_ISA sets its own. NAME is one of oneDNN's: SSE41, AVX, AVX2, AVX2_VNNI,
// AVX512_CORE, AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX512_CORE_AMX or ALL, in any case. Since
// Gantry's loops give the same bits at every width (above), only oneDNN's kernels, which sum in
// an order of their own per ISA, can change results under a limit. gan_devices prints the limit
// in force, and a NAME it does not know is refused, naming the variable.
#pragma once

#include <cstdint>
#include <string>

namespace gantry::cpu {

enum class VectorIsa : uint8_t { Baseline, Avx2, Avx512 };

// GANTRY_MAX_CPU_ISA upper-cased ("" when unset); an unknown name is an error naming the
// variable and the names it accepts.
const std::string& max_cpu_isa_setting();

// The widest of those this CPU runs within GANTRY_MAX_CPU_ISA, decided once per process (or the
// one forced below).
VectorIsa vector_isa();
// Forces vector_isa() to `isa`, which this CPU must run, for the tests comparing the variants;
// reset_vector_isa_for_testing() goes back to the widest.
void set_vector_isa_for_testing(VectorIsa isa);
void reset_vector_isa_for_testing();
// Whether this CPU runs `isa`'s loops (within GANTRY_MAX_CPU_ISA).
bool cpu_supports(VectorIsa isa);
const char* vector_isa_name(VectorIsa isa);

// Of one loop's three copies, the one vector_isa() picks.
template <typename Fn>
Fn for_this_cpu(Fn avx512, Fn avx2, Fn baseline) {
  switch (vector_isa()) {
    case VectorIsa::Avx512: return avx512;
    case VectorIsa::Avx2: return avx2;
    case VectorIsa::Baseline: break;
  }
  return baseline;
}

}  // namespace gantry::cpu

// The body shared by the variants, inlined into each so that it is compiled for each.
#define GANTRY_ALWAYS_INLINE inline __attribute__((always_inline))
#define GANTRY_TARGET_AVX2 __attribute__((target("avx2")))
#define GANTRY_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
