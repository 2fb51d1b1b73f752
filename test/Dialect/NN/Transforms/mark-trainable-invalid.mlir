// RUN: pipedream-opt %s -split-input-file -verify-diagnostics --nn-mark-trainable="train=nothing_like_this"
// RUN: not pipedream-opt %s -split-input-file --nn-mark-trainable="freeze=w train=w" 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not pipedream-opt %s -split-input-file --nn-mark-trainable="train=idx" 2>&1 | FileCheck %s --check-prefix=INT
// RUN: not pipedream-opt %s -split-input-file --nn-mark-trainable="freeze=(" 2>&1 | FileCheck %s --check-prefix=REGEX
// RUN: not pipedream-opt %s -split-input-file --nn-mark-trainable="result=3" 2>&1 | FileCheck %s --check-prefix=RESULT

// BOTH: weight 'w' is matched by both --freeze 'w' and --train 'w'
// INT: --train 'idx': the weight has element type 'i64'; only float weights can be trained
// REGEX: --freeze '(': no weight has this name and it is not a valid regular expression
// RESULT: trainable weights: function 'main' has no result 3 to train

// expected-error @+1 {{--train 'nothing_like_this' matches no weight of the model}}
func.func @main(%x: tensor<2x4xf32> {nn.name = "x"},
                %w: tensor<4x4xf32> {nn.name = "w", nn.param = dense<0.5> : tensor<4x4xf32>},
                %idx: tensor<2xi64> {nn.name = "idx", nn.param = dense<1> : tensor<2xi64>})
    -> (tensor<2x4xf32> {nn.name = "y"}) {
  %h = nn.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %h : tensor<2x4xf32>
}
