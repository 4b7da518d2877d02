// A two-layer perceptron with a softmax head, as jax.jit(...).lower(...).as_text() prints
// it: x[4,8] @ w1[8,16] + b1 -> relu -> @ w2[16,4] + b2 -> softmax over the last axis.
module @mlp attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %b1: tensor<16xf32>,
                         %w2: tensor<16x4xf32>, %b2: tensor<4xf32>) -> (tensor<4x4xf32> {jax.result_info = ""}) {
    %h = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %b1b = stablehlo.broadcast_in_dim %b1, dims = [1] : (tensor<16xf32>) -> tensor<4x16xf32>
    %h1 = stablehlo.add %h, %b1b : tensor<4x16xf32>
    %zero = stablehlo.constant dense<0.000000e+00> : tensor<4x16xf32>
    %relu = stablehlo.maximum %h1, %zero : tensor<4x16xf32>
    %o = stablehlo.dot_general %relu, %w2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
    %b2b = stablehlo.broadcast_in_dim %b2, dims = [1] : (tensor<4xf32>) -> tensor<4x4xf32>
    %logits = stablehlo.add %o, %b2b : tensor<4x4xf32>
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %max = stablehlo.reduce(%logits init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<4x4xf32>, tensor<f32>) -> tensor<4xf32>
    %maxb = stablehlo.broadcast_in_dim %max, dims = [0] : (tensor<4xf32>) -> tensor<4x4xf32>
    %shifted = stablehlo.subtract %logits, %maxb : tensor<4x4xf32>
    %e = stablehlo.exponential %shifted : tensor<4x4xf32>
    %czero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %sum = stablehlo.reduce(%e init: %czero) applies stablehlo.add across dimensions = [1] : (tensor<4x4xf32>, tensor<f32>) -> tensor<4xf32>
    %sumb = stablehlo.broadcast_in_dim %sum, dims = [0] : (tensor<4xf32>) -> tensor<4x4xf32>
    %p = stablehlo.divide %e, %sumb : tensor<4x4xf32>
    return %p : tensor<4x4xf32>
  }
}
