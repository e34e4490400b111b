// Ready-made models with torchvision's structure and parameter names, so checkpoints map one to one
// onto torchvision's state_dict ("layer1.0.conv1.weight", "layer2.0.downsample.1.running_mean").
//   nn::Model model(nn::resnet18(10), /*seed=*/0);
#pragma once

#include "frontend/nn/layers.h"

namespace smelt::nn {

/// ResNet-18 (He et al. 2016) as torchvision.models.resnet18 builds it: a 7x7 stride-2 stem, a 3x3
/// stride-2 max pool, four stages of two basic blocks (64, 128, 256, 512 channels; the first block of
/// stages 2-4 halves the resolution, its shortcut a 1x1 convolution and batch norm), a global average
/// pool and a linear classifier. Convolutions have no bias and torchvision's initialization (Kaiming
/// normal, fan-out); NCHW input of 3 channels, any size that survives five halvings.
ModulePtr resnet18(int64_t numClasses = 1000);

}  // namespace smelt::nn
