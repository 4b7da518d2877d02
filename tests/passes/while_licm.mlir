// RUN: passes=while-licm
// A weight passed through the loop unchanged: the loop stops carrying it, the slice and
// reshape of it move out before the loop, the dot that also reads the carried state
// stays (the interpreter gives the same results before and after).
func.func @main() -> (tensor<i32>, tensor<2x4x2xf32>, tensor<4xf32>) {
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %w0 = stablehlo.constant dense<[[0.5, 0.1, 0.0, 0.2], [0.3, 0.2, 0.1, 0.0], [0.1, 0.0, 0.4, 0.1], [0.0, 0.2, 0.1, 0.3]]> : tensor<4x4xf32>
  %w1 = stablehlo.reshape %w0 : (tensor<4x4xf32>) -> tensor<2x4x2xf32>
  %wb = stablehlo.transpose %w1, dims = [1, 0, 2] : (tensor<2x4x2xf32>) -> tensor<4x2x2xf32>
  %w = stablehlo.reshape %wb : (tensor<4x2x2xf32>) -> tensor<2x4x2xf32>
  %h0 = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %r:3 = stablehlo.while(%i = %i0, %wt = %w, %h = %h0) : tensor<i32>, tensor<2x4x2xf32>, tensor<4xf32>
    cond {
      %n = stablehlo.constant dense<3> : tensor<i32>
      %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %s = stablehlo.slice %wt [0:1, 0:4, 0:2] : (tensor<2x4x2xf32>) -> tensor<1x4x2xf32>
      %m = stablehlo.reshape %s : (tensor<1x4x2xf32>) -> tensor<4x2xf32>
      %hh = stablehlo.slice %h [0:4] : (tensor<4xf32>) -> tensor<4xf32>
      %d = stablehlo.dot_general %hh, %m, contracting_dims = [0] x [0] : (tensor<4xf32>, tensor<4x2xf32>) -> tensor<2xf32>
      %e = stablehlo.concatenate %d, %d, dim = 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
      %t = stablehlo.tanh %e : tensor<4xf32>
      stablehlo.return %j, %wt, %t : tensor<i32>, tensor<2x4x2xf32>, tensor<4xf32>
    }
  %q = stablehlo.reshape %r#1 : (tensor<2x4x2xf32>) -> tensor<2x4x2xf32>
  return %r#0, %q, %r#2 : tensor<i32>, tensor<2x4x2xf32>, tensor<4xf32>
}
// CHECK: stablehlo.slice
// CHECK: stablehlo.reshape
// CHECK: stablehlo.while
// CHECK-NOT: stablehlo.reshape
// CHECK: stablehlo.dot_general
// CHECK: stablehlo.tanh
// CHECK: ) : (tensor<i32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>)
// CHECK: stablehlo.reshape %w :

// -----
// Nothing invariant: a broadcast of an outside value is not hoisted (it would only keep a
// larger buffer live across the loop), nor is an op reading the carried state; a body
// constant read by a hoisted op is copied out (the body keeps its own).
func.func @main() -> (tensor<4xf32>, tensor<4xf32>) {
  %x0 = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %s0 = stablehlo.constant dense<0.5> : tensor<f32>
  %r = stablehlo.while(%x = %x0) : tensor<4xf32>
    cond {
      %lim = stablehlo.constant dense<10.0> : tensor<f32>
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %tot = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
      %c = stablehlo.compare LT, %tot, %lim : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %two = stablehlo.constant dense<2.0> : tensor<f32>
      %k = stablehlo.multiply %s0, %two : tensor<f32>
      %b = stablehlo.broadcast_in_dim %k, dims = [] : (tensor<f32>) -> tensor<4xf32>
      %y = stablehlo.add %x, %b : tensor<4xf32>
      %tw = stablehlo.broadcast_in_dim %two, dims = [] : (tensor<f32>) -> tensor<4xf32>
      %y2 = stablehlo.multiply %y, %tw : tensor<4xf32>
      stablehlo.return %y2 : tensor<4xf32>
    }
  return %r, %x0 : tensor<4xf32>, tensor<4xf32>
}
// CHECK: stablehlo.constant dense<2.0
// CHECK: stablehlo.multiply
// CHECK: stablehlo.while
// CHECK: stablehlo.broadcast_in_dim
// CHECK: stablehlo.add
