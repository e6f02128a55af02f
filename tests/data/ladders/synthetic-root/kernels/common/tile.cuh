// Shared by the synthetic fixture's rungs: found through -I kernels/common from a nested ladder.
#pragma once
#define SYNTHETIC_TILE 16
