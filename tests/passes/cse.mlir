// RUN: passes=cse
// Equal pure ops merge; commutative operands in either order merge; constants merge.
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = stablehlo.add %x, %y : tensor<4xf32>
  %b = stablehlo.add %y, %x : tensor<4xf32>
  %c1 = stablehlo.constant dense<2.0> : tensor<4xf32>
  %c2 = stablehlo.constant dense<2.0> : tensor<4xf32>
  %m1 = stablehlo.multiply %a, %c1 : tensor<4xf32>
  %m2 = stablehlo.multiply %b, %c2 : tensor<4xf32>
  %s = stablehlo.subtract %x, %y : tensor<4xf32>
  %t = stablehlo.subtract %y, %x : tensor<4xf32>
  return %m1, %m2, %t : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
// CHECK-LABEL: func.func @main
// CHECK: stablehlo.add
// CHECK-NOT: stablehlo.add
// CHECK: stablehlo.multiply
// CHECK-NOT: stablehlo.multiply
// CHECK: return %m1, %m1, %t

// -----
// Inside a region, a value of the enclosing block is reused.
func.func @main() -> tensor<i64> {
  %one = stablehlo.constant dense<1> : tensor<i64>
  %ten = stablehlo.constant dense<10> : tensor<i64>
  %r = stablehlo.while(%i = %one) : tensor<i64>
  cond {
    %c = stablehlo.compare LT, %i, %ten : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %k = stablehlo.constant dense<1> : tensor<i64>
    %n = stablehlo.add %i, %k : tensor<i64>
    stablehlo.return %n : tensor<i64>
  }
  return %r : tensor<i64>
}
// CHECK: stablehlo.constant dense<1>
// CHECK: stablehlo.constant dense<10>
// CHECK: stablehlo.compare LT
// CHECK-NOT: stablehlo.constant
// CHECK: stablehlo.add {{%i[_0-9]*}}, %one

// -----
// Side-effecting ops never merge.
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = stablehlo.custom_call @foo(%x) {has_side_effect = true} : (tensor<2xf32>) -> tensor<2xf32>
  %b = stablehlo.custom_call @foo(%x) {has_side_effect = true} : (tensor<2xf32>) -> tensor<2xf32>
  %c = stablehlo.add %a, %b : tensor<2xf32>
  return %c : tensor<2xf32>
}
// CHECK: custom_call
// CHECK: custom_call
