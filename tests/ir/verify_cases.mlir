// Invalid programs for the verifier, one per `// -----` part. Each part has exactly one
// `// expected-error@+1 {{...}}` line: the op on the next line must be the one the
// verifier rejects (tests/ir/test_verifier.py gives that line a location to check), and
// the error message must contain the text between the braces.

// ============================================================ structure

func.func @main(%a: tensor<2xf32>) -> tensor<2xi32> {
  %0 = stablehlo.add %a, %a : tensor<2xf32>
  // expected-error@+1 {{returns (tensor<2xf32>) but @main has result types (tensor<2xi32>)}}
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{returns () but @main has result types (tensor<2xf32>)}}
  func.return
}

// -----

func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{calls @missing, which is not defined}}
  %0 = func.call @missing(%a) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func private @callee(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
func.func @main(%a: tensor<3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{passes (tensor<3xf32>) to @callee, which takes (tensor<2xf32>)}}
  %0 = func.call @callee(%a) : (tensor<3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{expects 2 operands, found 1}}
  %0 = "stablehlo.add"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{must end in func.return, found stablehlo.return}}
  stablehlo.return %a : tensor<2xf32>
}

// -----

func.func @main(%a: tensor<4xf32>, %i: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.reduce(%a init: %i) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    reducer(%x: tensor<f32>, %y: tensor<f32>) {
      // expected-error@+1 {{must end in stablehlo.return, found func.return}}
      func.return %x : tensor<f32>
    }
  func.return %0 : tensor<f32>
}

// -----

// ============================================================ elementwise

func.func @main(%a: tensor<2xf32>, %b: tensor<3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{(C1) operand shapes must match, found [2], [3]}}
  %0 = stablehlo.add %a, %b : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%a: tensor<2xf32>, %b: tensor<2xf64>) -> tensor<2xf32> {
  // expected-error@+1 {{(C1) operand element types must match, found f32 and f64}}
  %0 = stablehlo.multiply %a, %b : (tensor<2xf32>, tensor<2xf64>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%a: tensor<2xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{(C1) result type must be tensor<2xf32>, found tensor<3xf32>}}
  %0 = stablehlo.subtract %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{(I1) operand #0 must be a tensor of boolean or integer type, found tensor<2xf32>}}
  %0 = stablehlo.and %a, %a : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%a: tensor<2xi1>) -> tensor<2xi1> {
  // expected-error@+1 {{(I1) operand #0 must be a tensor of integer type, found tensor<2xi1>}}
  %0 = stablehlo.shift_left %a, %a : tensor<2xi1>
  func.return %0 : tensor<2xi1>
}

// -----

func.func @main(%a: tensor<2xi32>) -> tensor<2xi32> {
  // expected-error@+1 {{(I1) operand #0 must be a tensor of floating-point, complex or quantized type}}
  %0 = stablehlo.sqrt %a : tensor<2xi32>
  func.return %0 : tensor<2xi32>
}

// -----

func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{(I1) operand #0 must be a tensor of boolean or integer type}}
  %0 = stablehlo.not %a : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{(I1) operand #0 must be a tensor of integer type}}
  %0 = stablehlo.popcnt %a : tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%a: tensor<2xui32>) -> tensor<2xui32> {
  // expected-error@+1 {{(I1) operand #0 must be a tensor of signed integer, floating-point, complex or quantized type}}
  %0 = stablehlo.abs %a : tensor<2xui32>
  func.return %0 : tensor<2xui32>
}

// -----

func.func @main(%a: tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>> {
  // expected-error@+1 {{(C2) result type must be tensor<2xf32>, found tensor<2xcomplex<f32>>}}
  %0 = stablehlo.abs %a : tensor<2xcomplex<f32>>
  func.return %0 : tensor<2xcomplex<f32>>
}

// -----

func.func @main(%a: tensor<2xf32>) -> tensor<2xi1> {
  // expected-error@+1 {{(C3) compare_type SIGNED needs a signed integer element type, found f32}}
  %0 = stablehlo.compare LT, %a, %a, SIGNED : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  func.return %0 : tensor<2xi1>
}

// -----

func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{(C2) result type must be tensor<2xi1>, found tensor<2xf32>}}
  %0 = stablehlo.compare LT, %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%a: tensor<2xf32>, %b: tensor<2xi32>) -> tensor<2xi1> {
  // expected-error@+1 {{(C1) operand element types must match, found f32 and i32}}
  %0 = stablehlo.compare EQ, %a, %b : (tensor<2xf32>, tensor<2xi32>) -> tensor<2xi1>
  func.return %0 : tensor<2xi1>
}

// -----

func.func @main(%p: tensor<3xi1>, %a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{(C1) pred must be a scalar or have the shape of on_true [2], found tensor<3xi1>}}
  %0 = stablehlo.select %p, %a, %a : (tensor<3xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%p: tensor<i1>, %a: tensor<2xf32>, %b: tensor<2xi32>) -> tensor<2xf32> {
  // expected-error@+1 {{(C2) on_true and on_false must have the same element type}}
  %0 = stablehlo.select %p, %a, %b : (tensor<i1>, tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%m: tensor<3xf32>, %a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{(C1) min must be a scalar or have the operand's shape [2], found tensor<3xf32>}}
  %0 = stablehlo.clamp %m, %a, %a : (tensor<3xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%a: tensor<2xf16>) -> tensor<2xcomplex<f32>> {
  // expected-error@+1 {{(I1) operands must be tensors of f32 or f64, found tensor<2xf16>}}
  %0 = stablehlo.complex %a, %a : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xcomplex<f32>>
  func.return %0 : tensor<2xcomplex<f32>>
}

// -----

func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{(C1) result type must be tensor<2xi1>, found tensor<2xf32>}}
  %0 = stablehlo.is_finite %a : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%a: tensor<2xi32>) -> tensor<2xi32> {
  // expected-error@+1 {{(I1) operand #0 must be a tensor of floating-point or complex type, found tensor<2xi32>}}
  %0 = stablehlo.real %a : tensor<2xi32>
  func.return %0 : tensor<2xi32>
}

// -----

// ============================================================ shapes

func.func @main(%a: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error@+1 {{(C5) operand dimension 0 (size 3) must be 1 or match result dimension 1 (size 4)}}
  %0 = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @main(%a: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{(C2) broadcast_dimensions [0, 1] must have 1 entries (the operand's rank)}}
  %0 = stablehlo.broadcast_in_dim %a, dims = [0, 1] : (tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @main(%a: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{(C3) broadcast_dimensions [2]: 2 is out of range for result rank 2}}
  %0 = stablehlo.broadcast_in_dim %a, dims = [2] : (tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @main(%a: tensor<1x1xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{(C4) broadcast_dimensions [1, 1] must be unique}}
  %0 = stablehlo.broadcast_in_dim %a, dims = [1, 1] : (tensor<1x1xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @main(%a: tensor<3xf32>) -> tensor<2x3xi32> {
  // expected-error@+1 {{(C1) result element type must be the operand's f32, found i32}}
  %0 = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x3xi32>
  func.return %0 : tensor<2x3xi32>
}

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<5xf32> {
  // expected-error@+1 {{(C2) operand and result must have the same number of elements, found 6}}
  %0 = stablehlo.reshape %a : (tensor<2x3xf32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<6xf64> {
  // expected-error@+1 {{(C1) result element type must be the operand's f32, found f64}}
  %0 = stablehlo.reshape %a : (tensor<2x3xf32>) -> tensor<6xf64>
  func.return %0 : tensor<6xf64>
}

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error@+1 {{(C2) permutation [0, 0] is not a permutation of range(2)}}
  %0 = stablehlo.transpose %a, dims = [0, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{(C3) result type must be tensor<3x2xf32>, found tensor<2x3xf32>}}
  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error@+1 {{(C3) dimension 1: need 0 <= start (2) <= limit (4) <= size (3)}}
  %0 = "stablehlo.slice"(%a) {start_indices = array<i64: 0, 2>, limit_indices = array<i64: 2, 4>, strides = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}

// -----

func.func @main(%a: tensor<8xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{(C5) result type must be tensor<4xf32>, found tensor<3xf32>}}
  %0 = "stablehlo.slice"(%a) {start_indices = array<i64: 1>, limit_indices = array<i64: 8>, strides = array<i64: 2>} : (tensor<8xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @main(%a: tensor<8xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{(C4) strides must be positive, found [0]}}
  %0 = "stablehlo.slice"(%a) {start_indices = array<i64: 1>, limit_indices = array<i64: 4>, strides = array<i64: 0>} : (tensor<8xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @main(%a: tensor<4xf32>, %i: tensor<i32>) -> tensor<5xf32> {
  // expected-error@+1 {{(C4) slice size 5 of dimension 0 must be in [0, 4]}}
  %0 = stablehlo.dynamic_slice %a, %i, sizes = [5] : (tensor<4xf32>, tensor<i32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}

// -----

func.func @main(%a: tensor<4x4xf32>, %i: tensor<i32>) -> tensor<2x2xf32> {
  // expected-error@+1 {{(C2) need one start index and one slice size per operand dimension (2), found 1 start indices and 2 slice sizes}}
  %0 = stablehlo.dynamic_slice %a, %i, sizes = [2, 2] : (tensor<4x4xf32>, tensor<i32>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}

// -----

func.func @main(%a: tensor<4xf32>, %u: tensor<5xf32>, %i: tensor<i32>) -> tensor<4xf32> {
  // expected-error@+1 {{(C6) update dimension 0 (5) exceeds the operand's (4)}}
  %0 = stablehlo.dynamic_update_slice %a, %u, %i : (tensor<4xf32>, tensor<5xf32>, tensor<i32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error@+1 {{(C4) dimension 2 is out of range for rank 2}}
  %0 = stablehlo.concatenate %a, %a, dim = 2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<4x3xf32> {
  // expected-error@+1 {{(C2) inputs must have the same shape except in dimension 0, found [2, 3], [2, 4]}}
  %0 = stablehlo.concatenate %a, %b, dim = 0 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<2x5xf32> {
  // expected-error@+1 {{(C6) result type must be tensor<2x6xf32>, found tensor<2x5xf32>}}
  %0 = stablehlo.concatenate %a, %a, dim = 1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// -----

func.func @main(%a: tensor<3xf32>, %p: tensor<f32>) -> tensor<8xf32> {
  // expected-error@+1 {{(C4) result type must be tensor<10xf32>, found tensor<8xf32>}}
  %0 = stablehlo.pad %a, %p, low = [1], high = [2], interior = [2] : (tensor<3xf32>, tensor<f32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

func.func @main(%a: tensor<3xf32>, %p: tensor<f32>) -> tensor<3xf32> {
  // expected-error@+1 {{(C3) interior_padding must be non-negative, found [-1]}}
  %0 = stablehlo.pad %a, %p, low = [0], high = [2], interior = [-1] : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @main(%a: tensor<3xf32>, %p: tensor<i32>) -> tensor<3xf32> {
  // expected-error@+1 {{(C1) padding value element type i32 must be the operand's f32}}
  %0 = stablehlo.pad %a, %p, low = [0], high = [0], interior = [0] : (tensor<3xf32>, tensor<i32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @main() -> tensor<2x3xf32> {
  // expected-error@+1 {{(C1) iota_dimension 2 is out of range for result rank 2}}
  %0 = stablehlo.iota dim = 2 : tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<3x2xi32> {
  // expected-error@+1 {{(C1) result shape must be the operand's [2, 3], found tensor<3x2xi32>}}
  %0 = stablehlo.convert %a : (tensor<2x3xf32>) -> tensor<3x2xi32>
  func.return %0 : tensor<3x2xi32>
}

// -----

func.func @main(%a: tensor<2xf32>) -> tensor<2x3xf16> {
  // expected-error@+1 {{(C1) result shape must be [2, 2] (32-bit to 16-bit), found tensor<2x3xf16>}}
  %0 = stablehlo.bitcast_convert %a : (tensor<2xf32>) -> tensor<2x3xf16>
  func.return %0 : tensor<2x3xf16>
}

// -----

func.func @main(%a: tensor<2xf64>) -> tensor<2xcomplex<f32>> {
  // expected-error@+1 {{(C2) complex types can only be bitcast to complex types}}
  %0 = stablehlo.bitcast_convert %a : (tensor<2xf64>) -> tensor<2xcomplex<f32>>
  func.return %0 : tensor<2xcomplex<f32>>
}

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{(C2) dimensions [0, 0] are not unique}}
  %0 = stablehlo.reverse %a, dims = [0, 0] : tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<i32> {
  // expected-error@+1 {{(C1) dimension 2 is out of range for rank 2}}
  %0 = stablehlo.get_dimension_size %a, dim = 2 : (tensor<2x3xf32>) -> tensor<i32>
  func.return %0 : tensor<i32>
}

// -----

// ============================================================ contractions

func.func @main(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error@+1 {{(C10) contracting dimension sizes differ: lhs dim 1 is 3, rhs dim 0 is 4}}
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  // expected-error@+1 {{(C6) lhs_contracting_dimensions [2]: 2 is out of range for rank 2}}
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [2] x [0] : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{(C3) lhs batching [0] and contracting [0] dimensions must be unique}}
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [0] x [1] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<5x2xf32> {
  // expected-error@+1 {{result shape must be [2, 5], found tensor<5x2xf32>}}
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<5x2xf32>
  func.return %0 : tensor<5x2xf32>
}

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x5xi32>) -> tensor<2x5xf32> {
  // expected-error@+1 {{(C13) lhs and rhs element types must match, found f32 and i32}}
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x5xi32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// -----

func.func @main(%lhs: tensor<1x4x4x2xf32>, %rhs: tensor<3x3x3x1xf32>) -> tensor<1x2x2x1xf32> {
  // expected-error@+1 {{(C14) kernel input feature size 3 must be input feature size 2 / feature_group_count 1}}
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x4x2xf32>, tensor<3x3x3x1xf32>) -> tensor<1x2x2x1xf32>
  func.return %0 : tensor<1x2x2x1xf32>
}

// -----

func.func @main(%lhs: tensor<1x4x4x1xf32>, %rhs: tensor<3x3x1x1xf32>) -> tensor<1x4x4x1xf32> {
  // expected-error@+1 {{(C25) result shape must be [1, 2, 2, 1], found tensor<1x4x4x1xf32>}}
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x4x1xf32>, tensor<3x3x1x1xf32>) -> tensor<1x4x4x1xf32>
  func.return %0 : tensor<1x4x4x1xf32>
}

// -----

func.func @main(%lhs: tensor<1x4x4x1xf32>, %rhs: tensor<3x3x1x1xf32>) -> tensor<1x2x2x1xf32> {
  // expected-error@+1 {{(C2) window_strides must have 2 entries, found [1]}}
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x4x1xf32>, tensor<3x3x1x1xf32>) -> tensor<1x2x2x1xf32>
  func.return %0 : tensor<1x2x2x1xf32>
}

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{(C3) the two minor dimensions must be equal, found tensor<2x3xf32>}}
  %0 = stablehlo.cholesky %a, lower = true : tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @main(%a: tensor<3x3xf32>, %b: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error@+1 {{(C3) a must be square and match b's rows}}
  %0 = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>} : (tensor<3x3xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}

// -----

func.func @main(%a: tensor<8xf32>) -> tensor<8xcomplex<f32>> {
  // expected-error@+1 {{(C5) result type must be tensor<5xcomplex<f32>>, found tensor<8xcomplex<f32>>}}
  %0 = stablehlo.fft %a, type = RFFT, length = [8] : (tensor<8xf32>) -> tensor<8xcomplex<f32>>
  func.return %0 : tensor<8xcomplex<f32>>
}

// -----

func.func @main(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{(C2) FFT needs a complex operand, found tensor<8xf32>}}
  %0 = stablehlo.fft %a, type = FFT, length = [8] : (tensor<8xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

// ============================================================ gather / scatter

func.func @main(%a: tensor<3x4xf32>, %i: tensor<2x1xi32>) -> tensor<2x4xf32> {
  // expected-error@+1 {{(C21) slice_sizes[1] = 5 must be in [0, 4]}}
  %0 = "stablehlo.gather"(%a, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 5>} : (tensor<3x4xf32>, tensor<2x1xi32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @main(%a: tensor<3x4xf32>, %i: tensor<2x1xi32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{(C22) result type must be tensor<2x4xf32>, found tensor<2x3xf32>}}
  %0 = "stablehlo.gather"(%a, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 4>} : (tensor<3x4xf32>, tensor<2x1xi32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @main(%a: tensor<3x4xf32>, %i: tensor<2x1xi32>) -> tensor<2x4xf32> {
  // expected-error@+1 {{(C1) operand rank 2 must equal size(offset_dims) 1 + size(collapsed_slice_dims) 0}}
  %0 = "stablehlo.gather"(%a, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 4>} : (tensor<3x4xf32>, tensor<2x1xi32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @main(%a: tensor<3x4xf32>, %i: tensor<2x1xi32>) -> tensor<2x4xf32> {
  // expected-error@+1 {{(C3) start_index_map [0, 1] must have 1 entries (the index vector size)}}
  %0 = "stablehlo.gather"(%a, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0, 1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 4>} : (tensor<3x4xf32>, tensor<2x1xi32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @main(%a: tensor<3x4xf32>, %i: tensor<2x1xi32>, %u: tensor<2x5xf32>) -> tensor<3x4xf32> {
  // expected-error@+1 {{(C4) updates dimension 1 (5) exceeds the input's window bound (4)}}
  %0 = "stablehlo.scatter"(%a, %i, %u) ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      stablehlo.return %y : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : (tensor<3x4xf32>, tensor<2x1xi32>, tensor<2x5xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

func.func @main(%a: tensor<3x4xf32>, %i: tensor<2x1xi32>, %u: tensor<2x4xf32>) -> tensor<3x4xf32> {
  // expected-error@+1 {{(C23) update_computation must take 2 scalars and return 1}}
  %0 = "stablehlo.scatter"(%a, %i, %u) ({
    ^bb0(%x: tensor<f32>):
      stablehlo.return %x : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : (tensor<3x4xf32>, tensor<2x1xi32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

// ============================================================ reductions and windows

func.func @main(%a: tensor<4x5xf32>, %i: tensor<f32>) -> tensor<4xf32> {
  // expected-error@+1 {{(C4) dimensions [2]: 2 is out of range for rank 2}}
  %0 = stablehlo.reduce(%a init: %i) applies stablehlo.add across dimensions = [2] : (tensor<4x5xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @main(%a: tensor<4x5xf32>, %i: tensor<f32>) -> tensor<5xf32> {
  // expected-error@+1 {{(C7) result type must be tensor<4xf32>, found tensor<5xf32>}}
  %0 = stablehlo.reduce(%a init: %i) applies stablehlo.add across dimensions = [1] : (tensor<4x5xf32>, tensor<f32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}

// -----

func.func @main(%a: tensor<4x5xf32>, %i: tensor<i32>) -> tensor<4xf32> {
  // expected-error@+1 {{(C2) init value #0 element type i32 must be the input's f32}}
  %0 = stablehlo.reduce(%a init: %i) applies stablehlo.add across dimensions = [1] : (tensor<4x5xf32>, tensor<i32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @main(%a: tensor<4x5xf32>, %i: tensor<f32>) -> tensor<4xf32> {
  // expected-error@+1 {{(C6) body element type f16 cannot hold input element type f32}}
  %0 = "stablehlo.reduce"(%a, %i) ({
    ^bb0(%x: tensor<f16>, %y: tensor<f16>):
      %s = stablehlo.add %x, %y : tensor<f16>
      stablehlo.return %s : tensor<f16>
  }) {dimensions = array<i64: 1>} : (tensor<4x5xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @main(%a: tensor<4x6xf32>, %i: tensor<f32>) -> tensor<2x2xf32> {
  // expected-error@+1 {{(C15) result type must be tensor<2x3xf32>, found tensor<2x2xf32>}}
  %0 = "stablehlo.reduce_window"(%a, %i) ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      %s = stablehlo.maximum %x, %y : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>} : (tensor<4x6xf32>, tensor<f32>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}

// -----

func.func @main(%a: tensor<4x6xf32>, %i: tensor<f32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{(C4) window_dimensions must have 2 entries, found [2]}}
  %0 = "stablehlo.reduce_window"(%a, %i) ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      %s = stablehlo.maximum %x, %y : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {window_dimensions = array<i64: 2>} : (tensor<4x6xf32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @main(%a: tensor<4xf32>, %s: tensor<2xf32>, %i: tensor<f32>) -> tensor<4xf32> {
  // expected-error@+1 {{(C9) select must have type (tensor<f32>, tensor<f32>) -> tensor<i1>}}
  %0 = "stablehlo.select_and_scatter"(%a, %s, %i) ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      stablehlo.return %x : tensor<f32>
  }, {
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      %r = stablehlo.add %x, %y : tensor<f32>
      stablehlo.return %r : tensor<f32>
  }) {window_dimensions = array<i64: 2>, window_strides = array<i64: 2>} : (tensor<4xf32>, tensor<2xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{(C5) comparator must have type (tensor<f32>, tensor<f32>) -> tensor<i1>}}
  %0 = "stablehlo.sort"(%a) ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      stablehlo.return %x : tensor<f32>
  }) {dimension = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{(C4) dimension 1 must be in [-1, 1)}}
  %0 = "stablehlo.sort"(%a) ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      %c = stablehlo.compare LT, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
  }) {dimension = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{(C4) computation must have type (tensor<f32>, tensor<f32>) -> tensor<E>}}
  %0 = "stablehlo.map"(%a, %b) ({
    ^bb0(%x: tensor<f32>):
      stablehlo.return %x : tensor<f32>
  }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// ============================================================ control flow

func.func @main(%a: tensor<i64>) -> tensor<i64> {
  // expected-error@+1 {{(C1) cond must have type (tensor<i64>) -> tensor<i1>, found (tensor<i64>) -> (tensor<i64>)}}
  %0 = stablehlo.while(%x = %a) : tensor<i64>
    cond {
      stablehlo.return %x : tensor<i64>
    } do {
      stablehlo.return %x : tensor<i64>
    }
  func.return %0 : tensor<i64>
}

// -----

func.func @main(%a: tensor<i64>) -> tensor<i64> {
  // expected-error@+1 {{(C2) body must have type (tensor<i64>) -> (tensor<i64>), found (tensor<i64>) -> (tensor<i32>)}}
  %0 = stablehlo.while(%x = %a) : tensor<i64>
    cond {
      %c = stablehlo.compare LT, %x, %x : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %y = stablehlo.convert %x : (tensor<i64>) -> tensor<i32>
      stablehlo.return %y : tensor<i32>
    }
  func.return %0 : tensor<i64>
}

// -----

func.func @main(%p: tensor<i1>, %a: tensor<2xf32>, %b: tensor<3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{(C2) branches must return the same types, found (tensor<2xf32>) and (tensor<3xf32>) in branch #1}}
  %0 = "stablehlo.if"(%p) ({
    stablehlo.return %a : tensor<2xf32>
  }, {
    stablehlo.return %b : tensor<3xf32>
  }) : (tensor<i1>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%p: tensor<i1>, %a: tensor<2xf32>) -> tensor<2xi32> {
  // expected-error@+1 {{(C3) result type must be tensor<2xf32>, found tensor<2xi32>}}
  %0 = "stablehlo.if"(%p) ({
    stablehlo.return %a : tensor<2xf32>
  }, {
    stablehlo.return %a : tensor<2xf32>
  }) : (tensor<i1>) -> tensor<2xi32>
  func.return %0 : tensor<2xi32>
}

// -----

func.func @main(%i: tensor<i64>, %a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{(I1) index must be tensor<i32>, found tensor<i64>}}
  %0 = "stablehlo.case"(%i) ({
    stablehlo.return %a : tensor<2xf32>
  }, {
    stablehlo.return %a : tensor<2xf32>
  }) : (tensor<i64>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

// ============================================================ tuples, quantization, collectives

func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.tuple %a : tuple<tensor<2xf32>>
  // expected-error@+1 {{(C1) index 1 is out of range for tuple<tensor<2xf32>>}}
  %0 = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2xf32>>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @main(%a: tensor<2xf32>) -> tensor<2xi8> {
  // expected-error@+1 {{(I1) result must be a quantized tensor, found tensor<2xi8>}}
  %0 = stablehlo.uniform_quantize %a : (tensor<2xf32>) -> tensor<2xi8>
  func.return %0 : tensor<2xi8>
}

// -----

func.func @main(%a: tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f16, 0.5:1>> {
  // expected-error@+1 {{(C2) result expressed type must be f32, found f16}}
  %0 = stablehlo.uniform_quantize %a : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f16, 0.5:1>>
  func.return %0 : tensor<2x!quant.uniform<i8:f16, 0.5:1>>
}

// -----

func.func @main(%a: tensor<2x!quant.uniform<i8:f32, 0.5:1>>) -> tensor<2xf16> {
  // expected-error@+1 {{(C2) result type must be tensor<2xf32>, found tensor<2xf16>}}
  %0 = stablehlo.uniform_dequantize %a : (tensor<2x!quant.uniform<i8:f32, 0.5:1>>) -> tensor<2xf16>
  func.return %0 : tensor<2xf16>
}

// -----

func.func @main(%a: tensor<2x!quant.uniform<i8:f32, 0.5:1>>, %b: tensor<2x!quant.uniform<i16:f32, 0.5:1>>) -> tensor<2x!quant.uniform<i8:f32, 0.5:1>> {
  // expected-error@+1 {{(C3) quantized operands must have the same storage type}}
  %0 = stablehlo.add %a, %b : (tensor<2x!quant.uniform<i8:f32, 0.5:1>>, tensor<2x!quant.uniform<i16:f32, 0.5:1>>) -> tensor<2x!quant.uniform<i8:f32, 0.5:1>>
  func.return %0 : tensor<2x!quant.uniform<i8:f32, 0.5:1>>
}

// -----

func.func @main(%a: tensor<2x2xi64>) -> tensor<2x4xi64> {
  // expected-error@+1 {{(C1) all_gather_dim 2 is out of range for rank 2}}
  %0 = "stablehlo.all_gather"(%a) {all_gather_dim = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2x2xi64>) -> tensor<2x4xi64>
  func.return %0 : tensor<2x4xi64>
}

// -----

func.func @main(%a: tensor<2x2xi64>) -> tensor<2x2xi64> {
  // expected-error@+1 {{(C6) result type must be tensor<2x4xi64>, found tensor<2x2xi64>}}
  %0 = "stablehlo.all_gather"(%a) {all_gather_dim = 1 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2x2xi64>) -> tensor<2x2xi64>
  func.return %0 : tensor<2x2xi64>
}

// -----

func.func @main(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error@+1 {{(C5) computation must have type (tensor<E>, tensor<E>) -> tensor<E>}}
  %0 = "stablehlo.all_reduce"(%a) ({
    ^bb0(%x: tensor<i64>):
      stablehlo.return %x : tensor<i64>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xi64>) -> tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// -----

func.func @main(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error@+1 {{(C2) sources in source_target_pairs must be unique}}
  %0 = "stablehlo.collective_permute"(%a) {source_target_pairs = dense<[[0, 1], [0, 2]]> : tensor<2x2xi64>} : (tensor<4xi64>) -> tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// -----

func.func @main(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error@+1 {{(C1) replica_groups must be unique, found [0, 0]}}
  %0 = "stablehlo.all_reduce"(%a) ({
    ^bb0(%x: tensor<i64>, %y: tensor<i64>):
      %s = stablehlo.add %x, %y : tensor<i64>
      stablehlo.return %s : tensor<i64>
  }) {replica_groups = dense<[[0, 0]]> : tensor<1x2xi64>} : (tensor<4xi64>) -> tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// -----

// ============================================================ dynamic shapes

func.func @main(%a: tensor<?x3xf32>) -> tensor<?x3xi32> {
  // expected-error@+1 {{(C1) result type must be tensor<?x3xf32>, found tensor<?x3xi32>}}
  %0 = stablehlo.add %a, %a : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xi32>
  func.return %0 : tensor<?x3xi32>
}

// -----

func.func @main(%a: tensor<?x3xf32>, %s: tensor<2xi32>) -> tensor<2x?x3xf32> {
  // expected-error@+1 {{(C7) output_dimensions must have 3 elements, found tensor<2xi32>}}
  %0 = stablehlo.dynamic_broadcast_in_dim %a, %s, dims = [1, 2] : (tensor<?x3xf32>, tensor<2xi32>) -> tensor<2x?x3xf32>
  func.return %0 : tensor<2x?x3xf32>
}

// -----

func.func @main(%a: tensor<?x3xf32>, %s: tensor<2xi32>) -> tensor<?x4xf32> {
  // expected-error@+1 {{(C5) operand dimension 1 (size 3) must be 1 or match result dimension 1 (size 4)}}
  %0 = stablehlo.dynamic_broadcast_in_dim %a, %s, dims = [0, 1] : (tensor<?x3xf32>, tensor<2xi32>) -> tensor<?x4xf32>
  func.return %0 : tensor<?x4xf32>
}

// -----

func.func @main(%a: tensor<?x3xf32>, %s: tensor<3xi32>) -> tensor<?x3xf32> {
  // expected-error@+1 {{(C4) output_shape must have 2 elements, found tensor<3xi32>}}
  %0 = stablehlo.dynamic_reshape %a, %s : (tensor<?x3xf32>, tensor<3xi32>) -> tensor<?x3xf32>
  func.return %0 : tensor<?x3xf32>
}
