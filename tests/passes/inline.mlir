// RUN: passes=inline
// Calls of private functions are inlined and the functions erased; public ones stay.
func.func @main() -> tensor<2xi32> {
  %a = call @inputs() : () -> tensor<2xi32>
  %b = call @twice(%a) : (tensor<2xi32>) -> tensor<2xi32>
  %c = call @helper(%b) : (tensor<2xi32>) -> tensor<2xi32>
  return %c : tensor<2xi32>
}
func.func private @inputs() -> tensor<2xi32> {
  %c = stablehlo.constant dense<[3, 4]> : tensor<2xi32>
  return %c : tensor<2xi32>
}
func.func private @twice(%x: tensor<2xi32>) -> tensor<2xi32> {
  %y = stablehlo.add %x, %x : tensor<2xi32>
  return %y : tensor<2xi32>
}
func.func public @helper(%x: tensor<2xi32>) -> tensor<2xi32> {
  %y = stablehlo.negate %x : tensor<2xi32>
  return %y : tensor<2xi32>
}
// CHECK-LABEL: func.func @main
// CHECK-NOT: call
// CHECK: stablehlo.constant dense<[3, 4]>
// CHECK: stablehlo.add
// CHECK: stablehlo.negate
// CHECK-NOT: @inputs
// CHECK-NOT: @twice
// CHECK: func.func public @helper

// -----
// A function referenced by run_parallel stays.
func.func @main() -> tensor<2xi64> {
  %x = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %r = "interpreter.run_parallel"(%x) {programs = [[@prog]]} : (tensor<2xi64>) -> tensor<2xi64>
  return %r : tensor<2xi64>
}
func.func private @prog(%x: tensor<2xi64>) -> tensor<2xi64> {
  return %x : tensor<2xi64>
}
// CHECK: func.func private @prog
