// Stage functions of a 4-stage pipeline in the calling convention of
// pipe-unroll-schedule: F(x) -> (y, residual), B(residual, dy) -> (dx, dw)
// (no dy on the last stage, no dx on the first), U(dw); split: B(residual, dy) -> (dx, ctx), W(ctx) -> dw.
func.func private @s0_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_B(tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_W(tensor<2x4xf32>) -> tensor<4x4xf32> attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0_U(tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_B(tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_W(tensor<2x4xf32>) -> tensor<4x4xf32> attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1_U(tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s2_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<2>}
func.func private @s2_B(tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<2>}
func.func private @s2_W(tensor<2x4xf32>) -> tensor<4x4xf32> attributes {pipe.stage = #pipe.stage<2>}
func.func private @s2_U(tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<2>}
func.func private @s3_F(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<3>}
func.func private @s3_B(tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = #pipe.stage<3>}
func.func private @s3_W(tensor<2x4xf32>) -> tensor<4x4xf32> attributes {pipe.stage = #pipe.stage<3>}
func.func private @s3_U(tensor<4x4xf32>) attributes {pipe.stage = #pipe.stage<3>}
