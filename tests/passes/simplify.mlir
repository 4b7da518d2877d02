// RUN: passes=simplify,dce
// x * 1, x + (-0.0), x - 0.0, x / 1 and double negation disappear.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %mz = stablehlo.constant dense<-0.0> : tensor<4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %a = stablehlo.multiply %x, %one : tensor<4xf32>
  %b = stablehlo.add %mz, %a : tensor<4xf32>
  %c = stablehlo.subtract %b, %z : tensor<4xf32>
  %d = stablehlo.divide %c, %one : tensor<4xf32>
  %e = stablehlo.negate %d : tensor<4xf32>
  %f = stablehlo.negate %e : tensor<4xf32>
  return %f : tensor<4xf32>
}
// CHECK-LABEL: func.func @main
// CHECK-NOT: stablehlo.multiply
// CHECK-NOT: stablehlo.negate
// CHECK: return %x

// -----
// x + 0.0 is NOT x for floats (-0.0 + 0.0 = 0.0): it stays. x * 0 stays too.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %a = stablehlo.add %x, %z : tensor<4xf32>
  %b = stablehlo.multiply %a, %z : tensor<4xf32>
  return %b : tensor<4xf32>
}
// CHECK: stablehlo.add %x
// CHECK: stablehlo.multiply

// -----
// Integer x - x is zero and x + 0 is x.
func.func @main(%x: tensor<3xi32>) -> (tensor<3xi32>, tensor<3xi32>) {
  %z = stablehlo.constant dense<0> : tensor<3xi32>
  %a = stablehlo.subtract %x, %x : tensor<3xi32>
  %b = stablehlo.add %z, %x : tensor<3xi32>
  return %a, %b : tensor<3xi32>, tensor<3xi32>
}
// CHECK: stablehlo.constant dense<0>
// CHECK-NOT: stablehlo.subtract
// CHECK: return {{%[a-z0-9_]+}}, %x

// -----
// transpose of transpose composes to nothing; reshape of reshape to one reshape.
func.func @main(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x6xf32>) {
  %t1 = stablehlo.transpose %x, dims = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %t2 = stablehlo.transpose %t1, dims = [1, 2, 0] : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  %r1 = stablehlo.reshape %x : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %r2 = stablehlo.reshape %r1 : (tensor<24xf32>) -> tensor<4x6xf32>
  return %t2, %r2 : tensor<2x3x4xf32>, tensor<4x6xf32>
}
// CHECK-NOT: stablehlo.transpose
// CHECK: stablehlo.reshape %x : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK-NOT: stablehlo.reshape
// CHECK: return %x

// -----
// broadcast of broadcast composes; slice of slice composes; whole slices vanish.
func.func @main(%x: tensor<3xf32>, %y: tensor<10xf32>) -> (tensor<2x4x3xf32>, tensor<2xf32>, tensor<10xf32>) {
  %b1 = stablehlo.broadcast_in_dim %x, dims = [1] : (tensor<3xf32>) -> tensor<4x3xf32>
  %b2 = stablehlo.broadcast_in_dim %b1, dims = [1, 2] : (tensor<4x3xf32>) -> tensor<2x4x3xf32>
  %s1 = stablehlo.slice %y [1:9:2] : (tensor<10xf32>) -> tensor<4xf32>
  %s2 = stablehlo.slice %s1 [1:4:2] : (tensor<4xf32>) -> tensor<2xf32>
  %s3 = stablehlo.slice %y [0:10] : (tensor<10xf32>) -> tensor<10xf32>
  return %b2, %s2, %s3 : tensor<2x4x3xf32>, tensor<2xf32>, tensor<10xf32>
}
// CHECK: stablehlo.broadcast_in_dim %x, dims = [2] : (tensor<3xf32>) -> tensor<2x4x3xf32>
// CHECK: "stablehlo.slice"(%y) {start_indices = array<i64: 3>, limit_indices = array<i64: 8>, strides = array<i64: 4>}
// CHECK: return {{.*}}, %y

// -----
// select with a constant predicate picks; converts to the same type vanish; exact chains merge.
func.func @main(%a: tensor<2xf16>, %b: tensor<2xf16>) -> (tensor<2xf16>, tensor<2xf64>) {
  %t = stablehlo.constant dense<true> : tensor<2xi1>
  %s = stablehlo.select %t, %a, %b : tensor<2xi1>, tensor<2xf16>
  %c0 = stablehlo.convert %s : (tensor<2xf16>) -> tensor<2xf16>
  %c1 = stablehlo.convert %c0 : (tensor<2xf16>) -> tensor<2xf32>
  %c2 = stablehlo.convert %c1 : (tensor<2xf32>) -> tensor<2xf64>
  return %c0, %c2 : tensor<2xf16>, tensor<2xf64>
}
// CHECK-NOT: stablehlo.select
// CHECK: stablehlo.convert %a : (tensor<2xf16>) -> tensor<2xf64>
// CHECK: return %a

// -----
// A sum over a size-1 dimension with init -0.0 is a reshape; with init 0.0 it stays.
func.func @main(%x: tensor<3x1xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %mz = stablehlo.constant dense<-0.0> : tensor<f32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %a = stablehlo.reduce(%x init: %mz) applies stablehlo.add across dimensions = [1] : (tensor<3x1xf32>, tensor<f32>) -> tensor<3xf32>
  %b = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<3x1xf32>, tensor<f32>) -> tensor<3xf32>
  return %a, %b : tensor<3xf32>, tensor<3xf32>
}
// CHECK: stablehlo.reshape %x
// CHECK: stablehlo.reduce

// -----
// A dot of int8 / uint8 widened to its int32 result takes the narrow operands (uint8 x
// int8: both widened to int16, the spec wants one operand type); int8 widened to an int16
// result and a float widening stay as they are.
func.func @main(%a: tensor<4x8xui8>, %b: tensor<8x3xi8>, %c: tensor<8x3xui8>, %f: tensor<4x8xbf16>, %g: tensor<8x3xbf16>) -> (tensor<4x3xi32>, tensor<4x3xi32>, tensor<4x3xi16>, tensor<4x3xf32>) {
  %a32 = stablehlo.convert %a : (tensor<4x8xui8>) -> tensor<4x8xi32>
  %b32 = stablehlo.convert %b : (tensor<8x3xi8>) -> tensor<8x3xi32>
  %c32 = stablehlo.convert %c : (tensor<8x3xui8>) -> tensor<8x3xi32>
  %d0 = stablehlo.dot_general %a32, %c32, contracting_dims = [1] x [0] : (tensor<4x8xi32>, tensor<8x3xi32>) -> tensor<4x3xi32>
  %d1 = stablehlo.dot_general %a32, %b32, contracting_dims = [1] x [0] : (tensor<4x8xi32>, tensor<8x3xi32>) -> tensor<4x3xi32>
  %a16 = stablehlo.convert %a : (tensor<4x8xui8>) -> tensor<4x8xi16>
  %b16 = stablehlo.convert %b : (tensor<8x3xi8>) -> tensor<8x3xi16>
  %d2 = stablehlo.dot_general %a16, %b16, contracting_dims = [1] x [0] : (tensor<4x8xi16>, tensor<8x3xi16>) -> tensor<4x3xi16>
  %f32 = stablehlo.convert %f : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %g32 = stablehlo.convert %g : (tensor<8x3xbf16>) -> tensor<8x3xf32>
  %d3 = stablehlo.dot_general %f32, %g32, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  return %d0, %d1, %d2, %d3 : tensor<4x3xi32>, tensor<4x3xi32>, tensor<4x3xi16>, tensor<4x3xf32>
}
// CHECK: stablehlo.dot_general %a, %c, {{.*}} : (tensor<4x8xui8>, tensor<8x3xui8>) -> tensor<4x3xi32>
// CHECK: stablehlo.convert %a : (tensor<4x8xui8>) -> tensor<4x8xi16>
// CHECK: stablehlo.convert %b : (tensor<8x3xi8>) -> tensor<8x3xi16>
// CHECK: stablehlo.dot_general {{.*}} : (tensor<4x8xi16>, tensor<8x3xi16>) -> tensor<4x3xi32>
// CHECK: stablehlo.dot_general {{.*}} : (tensor<4x8xi16>, tensor<8x3xi16>) -> tensor<4x3xi16>
// CHECK: stablehlo.dot_general {{.*}} : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>

// -----
// A dot whose contracting dimensions have extent 1 is one product per element: a multiply
// of the operands broadcast to the result (+0.0 for floats, as the dot's sum from +0.0),
// the operands' free dimensions transposed into the result's order; bf16 -> f32 widened
// first. A dot with a longer contraction stays.
func.func @main(%a: tensor<8x1x5xf32>, %b: tensor<3x1x8xf32>, %c: tensor<4x1xbf16>, %d: tensor<1x6xbf16>, %e: tensor<4x2xf32>, %f: tensor<2x6xf32>) -> (tensor<8x5x3xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [2], contracting_dims = [1] x [1] : (tensor<8x1x5xf32>, tensor<3x1x8xf32>) -> tensor<8x5x3xf32>
  %1 = stablehlo.dot_general %c, %d, contracting_dims = [1] x [0] : (tensor<4x1xbf16>, tensor<1x6xbf16>) -> tensor<4x6xf32>
  %2 = stablehlo.dot_general %e, %f, contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x6xf32>) -> tensor<4x6xf32>
  return %0, %1, %2 : tensor<8x5x3xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}
// CHECK: stablehlo.reshape %a : (tensor<8x1x5xf32>) -> tensor<8x5xf32>
// CHECK: stablehlo.broadcast_in_dim {{.*}} dims = [0, 1] : (tensor<8x5xf32>) -> tensor<8x5x3xf32>
// CHECK: stablehlo.reshape %b : (tensor<3x1x8xf32>) -> tensor<3x8xf32>
// CHECK: stablehlo.transpose {{.*}} dims = [1, 0] : (tensor<3x8xf32>) -> tensor<8x3xf32>
// CHECK: stablehlo.broadcast_in_dim {{.*}} dims = [0, 2] : (tensor<8x3xf32>) -> tensor<8x5x3xf32>
// CHECK: stablehlo.multiply
// CHECK: stablehlo.add
// CHECK: stablehlo.convert %c : (tensor<4x1xbf16>) -> tensor<4x1xf32>
// CHECK: stablehlo.multiply
// CHECK: stablehlo.dot_general %e, %f

// -----
// The same, evaluated (translation validation): signed zeros, a batch dimension last in
// the rhs, int8 widened to int32.
func.func @main() -> (tensor<2x3x2xf32>, tensor<2x2xi32>) {
  %a = stablehlo.constant dense<[[[-0.0], [1.5], [-2.0]], [[0.0], [3.0], [-0.5]]]> : tensor<2x3x1xf32>
  %b = stablehlo.constant dense<[[[0.0, -0.0]], [[-4.0, 2.0]]]> : tensor<2x1x2xf32>
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [2], contracting_dims = [2] x [1] : (tensor<2x3x1xf32>, tensor<2x1x2xf32>) -> tensor<2x3x2xf32>
  %c = stablehlo.constant dense<[[-128], [127]]> : tensor<2x1xi8>
  %d = stablehlo.constant dense<[[-128, 5]]> : tensor<1x2xi8>
  %1 = stablehlo.dot_general %c, %d, contracting_dims = [1] x [0] : (tensor<2x1xi8>, tensor<1x2xi8>) -> tensor<2x2xi32>
  return %0, %1 : tensor<2x3x2xf32>, tensor<2x2xi32>
}
// CHECK-NOT: stablehlo.dot_general

// -----
// reverse along size-1 dimensions only (a 1x1 kernel's flip in a convolution gradient) is
// the operand; a reverse along a longer dimension stays.
func.func @main(%w: tensor<8x4x1x1xf32>, %v: tensor<8x3xf32>) -> (tensor<8x4x1x1xf32>, tensor<8x3xf32>) {
  %0 = stablehlo.reverse %w, dims = [2, 3] : tensor<8x4x1x1xf32>
  %1 = stablehlo.reverse %v, dims = [1] : tensor<8x3xf32>
  return %0, %1 : tensor<8x4x1x1xf32>, tensor<8x3xf32>
}
// CHECK: %0 = stablehlo.reverse %v, dims = [1]
// CHECK: return %w, %0

// -----
// x ** 1 -> x and x ** 2 -> x * x (floats only); other exponents stay.
func.func @main(%x: tensor<4xf32>, %n: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %two = stablehlo.constant dense<2.0> : tensor<4xf32>
  %three = stablehlo.constant dense<3.0> : tensor<4xf32>
  %i2 = stablehlo.constant dense<2> : tensor<4xi32>
  %0 = stablehlo.power %x, %one : tensor<4xf32>
  %1 = stablehlo.power %x, %two : tensor<4xf32>
  %2 = stablehlo.power %x, %three : tensor<4xf32>
  %3 = stablehlo.power %n, %i2 : tensor<4xi32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}
// CHECK: %0 = stablehlo.multiply %x, %x
// CHECK: stablehlo.power %x
// CHECK: stablehlo.power %n
// CHECK: return %x, %0

// -----
// The same, evaluated: NaN, infinities, signed zeros, a denormal, large and small values.
func.func @main() -> (tensor<8xf32>, tensor<8xf32>) {
  %x = stablehlo.constant dense<[0x7FC00000, 0x7F800000, 0xFF800000, -0.0, 1.0e-45, 3.0e+19, -1.5e-20, 2.5]> : tensor<8xf32>
  %one = stablehlo.constant dense<1.0> : tensor<8xf32>
  %two = stablehlo.constant dense<2.0> : tensor<8xf32>
  %0 = stablehlo.power %x, %one : tensor<8xf32>
  %1 = stablehlo.power %x, %two : tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}
// CHECK-NOT: stablehlo.power

// -----
// A slice within one operand of a concatenate slices that operand (strided too); one
// across two operands stays.
func.func @main(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) {
  %c = stablehlo.concatenate %a, %b, dim = 1 : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
  %0 = stablehlo.slice %c [0:4, 4:6] : (tensor<4x8xf32>) -> tensor<4x2xf32>
  %1 = stablehlo.slice %c [1:4:2, 3:8:3] : (tensor<4x8xf32>) -> tensor<2x2xf32>
  %2 = stablehlo.slice %c [0:4, 2:4] : (tensor<4x8xf32>) -> tensor<4x2xf32>
  return %0, %1, %2 : tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>
}
// CHECK: "stablehlo.slice"(%b) {start_indices = array<i64: 0, 1>, limit_indices = array<i64: 4, 3>, strides = array<i64: 1, 1>}
// CHECK: "stablehlo.slice"(%b) {start_indices = array<i64: 1, 0>, limit_indices = array<i64: 4, 4>, strides = array<i64: 2, 3>}
// CHECK: "stablehlo.slice"(%c) {start_indices = array<i64: 0, 2>

// -----
// The same, evaluated.
func.func @main() -> (tensor<2x2xi32>, tensor<1x3xi32>) {
  %a = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %b = stablehlo.constant dense<[[7, 8], [9, 10]]> : tensor<2x2xi32>
  %c = stablehlo.concatenate %a, %b, dim = 1 : (tensor<2x3xi32>, tensor<2x2xi32>) -> tensor<2x5xi32>
  %0 = stablehlo.slice %c [0:2, 3:5] : (tensor<2x5xi32>) -> tensor<2x2xi32>
  %1 = stablehlo.slice %c [1:2, 0:3] : (tensor<2x5xi32>) -> tensor<1x3xi32>
  return %0, %1 : tensor<2x2xi32>, tensor<1x3xi32>
}
// CHECK-NOT: stablehlo.concatenate
