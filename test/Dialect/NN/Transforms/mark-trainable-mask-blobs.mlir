// RUN: pipedream-opt %s --nn-mark-trainable="print=true" | FileCheck %s

// The mask rule on weights held as resource blobs (what the ONNX importer
// makes of initializers and external data), scanned by bit pattern for
// f32, f64, f16 and bf16: a value at or above half of the type's largest
// finite magnitude, an infinity or a NaN makes a mask; one ulp below half
// does not. Each blob is 2 elements, the extreme value second.
// CHECK:      trainable: 3 tensors, 6 elements
// CHECK-NEXT:   f32_below{{ +}}parameter
// CHECK-NEXT:   f32_big{{ +}}parameter
// CHECK-NEXT:   bf16_below{{ +}}parameter
// CHECK-NEXT: frozen:    5 tensors, 10 elements
// CHECK-NEXT:   f32_half{{ +}}mask (infinite or extreme values)
// CHECK-NEXT:   f64_half{{ +}}mask (infinite or extreme values)
// CHECK-NEXT:   f16_nan{{ +}}mask (infinite or extreme values)
// CHECK-NEXT:   bf16_ninf{{ +}}mask (infinite or extreme values)
// CHECK-NEXT:   bf16_half{{ +}}mask (infinite or extreme values)
func.func @main(%x: tensor<2xf32> {nn.name = "x"},
                %a: tensor<2xf32> {nn.name = "f32_below", nn.param = dense_resource<f32_below> : tensor<2xf32>},
                %b: tensor<2xf32> {nn.name = "f32_big", nn.param = dense_resource<f32_big> : tensor<2xf32>},
                %c: tensor<2xf32> {nn.name = "f32_half", nn.param = dense_resource<f32_half> : tensor<2xf32>},
                %d: tensor<2xf64> {nn.name = "f64_half", nn.param = dense_resource<f64_half> : tensor<2xf64>},
                %e: tensor<2xf16> {nn.name = "f16_nan", nn.param = dense_resource<f16_nan> : tensor<2xf16>},
                %f: tensor<2xbf16> {nn.name = "bf16_ninf", nn.param = dense_resource<bf16_ninf> : tensor<2xbf16>},
                %g: tensor<2xbf16> {nn.name = "bf16_below", nn.param = dense_resource<bf16_below> : tensor<2xbf16>},
                %h: tensor<2xbf16> {nn.name = "bf16_half", nn.param = dense_resource<bf16_half> : tensor<2xbf16>})
    -> (tensor<2xf32> {nn.name = "y"}) {
  %0 = nn.add %x, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = nn.add %0, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %2 = nn.add %1, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %dc = nn.cast %d {to = f32} : (tensor<2xf64>) -> tensor<2xf32>
  %3 = nn.add %2, %dc : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %ec = nn.cast %e {to = f32} : (tensor<2xf16>) -> tensor<2xf32>
  %4 = nn.add %3, %ec : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %fc = nn.cast %f {to = f32} : (tensor<2xbf16>) -> tensor<2xf32>
  %5 = nn.add %4, %fc : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %gc = nn.cast %g {to = f32} : (tensor<2xbf16>) -> tensor<2xf32>
  %6 = nn.add %5, %gc : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %hc = nn.cast %h {to = f32} : (tensor<2xbf16>) -> tensor<2xf32>
  %7 = nn.add %6, %hc : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %7 : tensor<2xf32>
}

// f32_below: 1.0, -0x7EFFFFFE (one ulp under FLT_MAX / 2); f32_big: 0.5,
// 1e38; f32_half: 0, -FLT_MAX / 2 (0xFEFFFFFF); f64_half: 0, DBL_MAX / 2
// (0x7FDFFFFFFFFFFFFF); f16_nan: 0, NaN (0x7E00); bf16_ninf: 0, -inf
// (0xFF80); bf16_below: 1.0 (0x3F80), 0x7EFE; bf16_half: 0, 0x7EFF.
{-#
  dialect_resources: {
    builtin: {
      f32_below: "0x040000000000803FFEFFFFFE",
      f32_big: "0x040000000000003F9976967E",
      f32_half: "0x0400000000000000FFFFFFFE",
      f64_half: "0x080000000000000000000000FFFFFFFFFFFFDF7F",
      f16_nan: "0x020000000000007E",
      bf16_ninf: "0x02000000000080FF",
      bf16_below: "0x02000000803FFE7E",
      bf16_half: "0x020000000000FF7E"
    }
  }
#-}
