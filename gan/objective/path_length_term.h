// StyleGAN2's path length regularisation of G (gan/objective/path_length.h) as an objective term named
// "path_length" (Note [objective terms], Note [path length batch]). pl_mean is its state,
// "path_length/pl_mean" (Note [term state]), so checkpoints carry it; checkpoints written before it
// was term state hold it as the generator's buffer "generator.pl_mean", which reading them moves
// here (Note [checkpoint layout] in gan/checkpoint/checkpoint_files.h). Lazy with settings.interval (Note
// [lazy terms]); needs a generator with style latents.
#pragma once

#include "gan/objective/path_length.h"
#include "gan/spec/objective_term.h"

namespace gantry::gan {

inline constexpr const char* kPathLengthMean = "path_length/pl_mean";

// settings.weight > 0 (0 turns regularisation off: the config then adds no term).
TermPtr make_path_length_term(const PathLengthSettings& settings);

}  // namespace gantry::gan
