// Stage functions of a 4-stage, 2-chunk pipeline in the calling convention of
// pipe-unroll-schedule: F(x) -> (y, residual), B(residual, dy) -> (dx, dw)
// (no dy on the last stage, no dx on the first), U(dw).
func.func private @s0c0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0c0_B(tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0c0_U(tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1c0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1c0_B(tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1c0_U(tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s2c0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<2>}
func.func private @s2c0_B(tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<2>}
func.func private @s2c0_U(tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<2>}
func.func private @s3c0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<3>}
func.func private @s3c0_B(tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<3>}
func.func private @s3c0_U(tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<3>}
func.func private @s0c1_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0, chunk = 1>}
func.func private @s0c1_B(tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<0, chunk = 1>}
func.func private @s0c1_U(tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<0, chunk = 1>}
func.func private @s1c1_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1, chunk = 1>}
func.func private @s1c1_B(tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<1, chunk = 1>}
func.func private @s1c1_U(tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<1, chunk = 1>}
func.func private @s2c1_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<2, chunk = 1>}
func.func private @s2c1_B(tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<2, chunk = 1>}
func.func private @s2c1_U(tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<2, chunk = 1>}
func.func private @s3c1_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<3, chunk = 1>}
func.func private @s3c1_B(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<3, chunk = 1>}
func.func private @s3c1_U(tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<3, chunk = 1>}
