// RUN: passes=unroll-loops
// A counted loop of three trips becomes three copies of its body (the interpreter gives
// the same results before and after: checked for every case without arguments).
func.func @main() -> (tensor<i32>, tensor<4xf32>) {
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %x0 = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %r:2 = stablehlo.while(%i = %i0, %x = %x0) : tensor<i32>, tensor<4xf32>
    cond {
      %n = stablehlo.constant dense<3> : tensor<i32>
      %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %y = stablehlo.multiply %x, %x : tensor<4xf32>
      %z = stablehlo.sine %y : tensor<4xf32>
      stablehlo.return %j, %z : tensor<i32>, tensor<4xf32>
    }
  return %r#0, %r#1 : tensor<i32>, tensor<4xf32>
}
// CHECK-NOT: stablehlo.while
// CHECK: stablehlo.sine
// CHECK: stablehlo.sine
// CHECK: stablehlo.sine
// CHECK-NOT: stablehlo.sine

// -----
// Counting down from 4 while i > 1 (3 trips); then a loop whose condition, with the bound
// on the left (5 > i), is false from the start (i = 7): no trips, its results are its
// initial values.
func.func @main() -> (tensor<i64>, tensor<4xf32>) {
  %i0 = stablehlo.constant dense<4> : tensor<i64>
  %x0 = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %r:2 = stablehlo.while(%i = %i0, %x = %x0) : tensor<i64>, tensor<4xf32>
    cond {
      %n = stablehlo.constant dense<1> : tensor<i64>
      %c = stablehlo.compare GT, %i, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %m = stablehlo.constant dense<-1> : tensor<i64>
      %j = stablehlo.add %m, %i : tensor<i64>
      %y = stablehlo.cosine %x : tensor<4xf32>
      stablehlo.return %j, %y : tensor<i64>, tensor<4xf32>
    }
  %k0 = stablehlo.constant dense<7> : tensor<i64>
  %q:2 = stablehlo.while(%i = %k0, %x = %r#1) : tensor<i64>, tensor<4xf32>
    cond {
      %n = stablehlo.constant dense<5> : tensor<i64>
      %c = stablehlo.compare GT, %n, %i : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %m = stablehlo.constant dense<-1> : tensor<i64>
      %j = stablehlo.add %i, %m : tensor<i64>
      %y = stablehlo.exponential %x : tensor<4xf32>
      stablehlo.return %j, %y : tensor<i64>, tensor<4xf32>
    }
  return %q#0, %q#1 : tensor<i64>, tensor<4xf32>
}
// CHECK-NOT: stablehlo.while
// CHECK-NOT: stablehlo.exponential
// CHECK: stablehlo.cosine
// CHECK: stablehlo.cosine
// CHECK: stablehlo.cosine
// CHECK-NOT: stablehlo.cosine

// -----
// An i8 counter wraps: from 125 stepping by 1 while i != -127 is 4 trips (125, 126, 127, -128).
func.func @main() -> tensor<4xf32> {
  %i0 = stablehlo.constant dense<125> : tensor<i8>
  %x0 = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %r:2 = stablehlo.while(%i = %i0, %x = %x0) : tensor<i8>, tensor<4xf32>
    cond {
      %n = stablehlo.constant dense<-127> : tensor<i8>
      %c = stablehlo.compare NE, %i, %n : (tensor<i8>, tensor<i8>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i8>
      %j = stablehlo.add %i, %one : tensor<i8>
      %h = stablehlo.constant dense<0.5> : tensor<4xf32>
      %y = stablehlo.multiply %x, %h : tensor<4xf32>
      stablehlo.return %j, %y : tensor<i8>, tensor<4xf32>
    }
  return %r#1 : tensor<4xf32>
}
// CHECK-NOT: stablehlo.while
// CHECK: stablehlo.multiply
// CHECK: stablehlo.multiply
// CHECK: stablehlo.multiply
// CHECK: stablehlo.multiply
// CHECK-NOT: stablehlo.multiply

// -----
// Left alone: nine trips (more than MAX_TRIPS), a bound that is not a constant, a body
// with a GEMM.
func.func @main(%n: tensor<i32>, %w: tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>) {
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %x0 = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %a:2 = stablehlo.while(%i = %i0, %x = %x0) : tensor<i32>, tensor<4xf32>
    cond {
      %nine = stablehlo.constant dense<9> : tensor<i32>
      %c = stablehlo.compare LT, %i, %nine : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %y = stablehlo.sine %x : tensor<4xf32>
      stablehlo.return %j, %y : tensor<i32>, tensor<4xf32>
    }
  %b:2 = stablehlo.while(%i = %i0, %x = %x0) : tensor<i32>, tensor<4xf32>
    cond {
      %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %y = stablehlo.cosine %x : tensor<4xf32>
      stablehlo.return %j, %y : tensor<i32>, tensor<4xf32>
    }
  %c:2 = stablehlo.while(%i = %i0, %v = %w) : tensor<i32>, tensor<4x4xf32>
    cond {
      %two = stablehlo.constant dense<2> : tensor<i32>
      %c = stablehlo.compare LT, %i, %two : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %d = stablehlo.dot_general %v, %v, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      stablehlo.return %j, %d : tensor<i32>, tensor<4x4xf32>
    }
  return %a#1, %b#1, %c#1 : tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>
}
// CHECK: stablehlo.while
// CHECK: stablehlo.sine
// CHECK: stablehlo.while
// CHECK: stablehlo.cosine
// CHECK: stablehlo.while
// CHECK: stablehlo.dot_general
