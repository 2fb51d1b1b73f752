// Stage functions of 4 ranks x 2 chunks (virtual stage v = chunk * 4 + rank) in the calling convention of
// pipe-unroll-schedule (docs/Pipe.md, "Stage functions"): F receives the
// micro-batch input "x" or edge v-1 and sends edge v (the last stage returns
// the loss) and one residual; B restores it, takes the gradient of edge v
// and returns that of edge v-1; its weight gradient updates the
// runtime-bound accumulator grad:w<v> (nn.updates), which U reads.

func.func private @s0c0_F(tensor<2x4xf32> {pipe.input = "x"}) -> (tensor<2x4xf32> {pipe.send = 0 : i64}, tensor<2x4xf32> {nn.residual = 0 : i64}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0c0_B(tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {pipe.grad = 0 : i64}) -> (tensor<4x4xf32> {nn.updates = "grad:w0"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s0c0_U(tensor<4x4xf32> {nn.role = "grad", nn.name = "grad:w0"}) attributes {pipe.stage = #pipe.stage<0>}
func.func private @s1c0_F(tensor<2x4xf32> {pipe.recv = 0 : i64}) -> (tensor<2x4xf32> {pipe.send = 1 : i64}, tensor<2x4xf32> {nn.residual = 0 : i64}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1c0_B(tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {pipe.grad = 1 : i64}) -> (tensor<2x4xf32> {pipe.grad = 0 : i64}, tensor<4x4xf32> {nn.updates = "grad:w1"}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s1c0_U(tensor<4x4xf32> {nn.role = "grad", nn.name = "grad:w1"}) attributes {pipe.stage = #pipe.stage<1>}
func.func private @s2c0_F(tensor<2x4xf32> {pipe.recv = 1 : i64}) -> (tensor<2x4xf32> {pipe.send = 2 : i64}, tensor<2x4xf32> {nn.residual = 0 : i64}) attributes {pipe.stage = #pipe.stage<2>}
func.func private @s2c0_B(tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {pipe.grad = 2 : i64}) -> (tensor<2x4xf32> {pipe.grad = 1 : i64}, tensor<4x4xf32> {nn.updates = "grad:w2"}) attributes {pipe.stage = #pipe.stage<2>}
func.func private @s2c0_U(tensor<4x4xf32> {nn.role = "grad", nn.name = "grad:w2"}) attributes {pipe.stage = #pipe.stage<2>}
func.func private @s3c0_F(tensor<2x4xf32> {pipe.recv = 2 : i64}) -> (tensor<2x4xf32> {pipe.send = 3 : i64}, tensor<2x4xf32> {nn.residual = 0 : i64}) attributes {pipe.stage = #pipe.stage<3>}
func.func private @s3c0_B(tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {pipe.grad = 3 : i64}) -> (tensor<2x4xf32> {pipe.grad = 2 : i64}, tensor<4x4xf32> {nn.updates = "grad:w3"}) attributes {pipe.stage = #pipe.stage<3>}
func.func private @s3c0_U(tensor<4x4xf32> {nn.role = "grad", nn.name = "grad:w3"}) attributes {pipe.stage = #pipe.stage<3>}
func.func private @s0c1_F(tensor<2x4xf32> {pipe.recv = 3 : i64}) -> (tensor<2x4xf32> {pipe.send = 4 : i64}, tensor<2x4xf32> {nn.residual = 0 : i64}) attributes {pipe.stage = #pipe.stage<0, chunk = 1>}
func.func private @s0c1_B(tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {pipe.grad = 4 : i64}) -> (tensor<2x4xf32> {pipe.grad = 3 : i64}, tensor<4x4xf32> {nn.updates = "grad:w4"}) attributes {pipe.stage = #pipe.stage<0, chunk = 1>}
func.func private @s0c1_U(tensor<4x4xf32> {nn.role = "grad", nn.name = "grad:w4"}) attributes {pipe.stage = #pipe.stage<0, chunk = 1>}
func.func private @s1c1_F(tensor<2x4xf32> {pipe.recv = 4 : i64}) -> (tensor<2x4xf32> {pipe.send = 5 : i64}, tensor<2x4xf32> {nn.residual = 0 : i64}) attributes {pipe.stage = #pipe.stage<1, chunk = 1>}
func.func private @s1c1_B(tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {pipe.grad = 5 : i64}) -> (tensor<2x4xf32> {pipe.grad = 4 : i64}, tensor<4x4xf32> {nn.updates = "grad:w5"}) attributes {pipe.stage = #pipe.stage<1, chunk = 1>}
func.func private @s1c1_U(tensor<4x4xf32> {nn.role = "grad", nn.name = "grad:w5"}) attributes {pipe.stage = #pipe.stage<1, chunk = 1>}
func.func private @s2c1_F(tensor<2x4xf32> {pipe.recv = 5 : i64}) -> (tensor<2x4xf32> {pipe.send = 6 : i64}, tensor<2x4xf32> {nn.residual = 0 : i64}) attributes {pipe.stage = #pipe.stage<2, chunk = 1>}
func.func private @s2c1_B(tensor<2x4xf32> {nn.residual = 0 : i64}, tensor<2x4xf32> {pipe.grad = 6 : i64}) -> (tensor<2x4xf32> {pipe.grad = 5 : i64}, tensor<4x4xf32> {nn.updates = "grad:w6"}) attributes {pipe.stage = #pipe.stage<2, chunk = 1>}
func.func private @s2c1_U(tensor<4x4xf32> {nn.role = "grad", nn.name = "grad:w6"}) attributes {pipe.stage = #pipe.stage<2, chunk = 1>}
func.func private @s3c1_F(tensor<2x4xf32> {pipe.recv = 6 : i64}) -> (tensor<f32> {nn.role = "loss"}, tensor<2x4xf32> {nn.residual = 0 : i64}) attributes {pipe.stage = #pipe.stage<3, chunk = 1>}
func.func private @s3c1_B(tensor<2x4xf32> {nn.residual = 0 : i64}) -> (tensor<2x4xf32> {pipe.grad = 6 : i64}, tensor<4x4xf32> {nn.updates = "grad:w7"}) attributes {pipe.stage = #pipe.stage<3, chunk = 1>}
func.func private @s3c1_U(tensor<4x4xf32> {nn.role = "grad", nn.name = "grad:w7"}) attributes {pipe.stage = #pipe.stage<3, chunk = 1>}
