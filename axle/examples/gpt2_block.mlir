// A GPT-2 style transformer block (pre-norm: layernorm, causal multi-head attention with
// a residual, layernorm, MLP with GELU and a residual), batch 1, sequence 64,
// d_model 128, 4 heads, float32. Lowered by jax.jit(block).lower(params, x).as_text()
// from axle/tools/workloads.py:transformer_block; the weights are the arguments of @main, in
// JAX's order (the parameter dict's keys sorted, then x), renamed after the parameters.
// Regenerate with `python axle/examples/make_gpt2_block.py`; `axle demo` runs it.
module @jit_block attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%b_fc: tensor<512xf32>, %b_o: tensor<128xf32>, %b_proj: tensor<128xf32>, %b_qkv: tensor<384xf32>, %ln1_b: tensor<128xf32>, %ln1_g: tensor<128xf32>, %ln2_b: tensor<128xf32>, %ln2_g: tensor<128xf32>, %w_fc: tensor<128x512xf32>, %w_o: tensor<128x128xf32>, %w_proj: tensor<512x128xf32>, %w_qkv: tensor<128x384xf32>, %x: tensor<1x64x128xf32>) -> (tensor<1x64x128xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%x init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<1x64x128xf32>, tensor<f32>) -> tensor<1x64xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<1x64xf32>) -> tensor<1x64x1xf32>
    %cst_0 = stablehlo.constant dense<1.280000e+02> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<1x64x1xf32>
    %3 = stablehlo.divide %1, %2 : tensor<1x64x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<1x64x1xf32>) -> tensor<1x64x128xf32>
    %5 = stablehlo.subtract %x, %4 : tensor<1x64x128xf32>
    %6 = stablehlo.multiply %5, %5 : tensor<1x64x128xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [2] : (tensor<1x64x128xf32>, tensor<f32>) -> tensor<1x64xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<1x64xf32>) -> tensor<1x64x1xf32>
    %cst_2 = stablehlo.constant dense<1.280000e+02> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<1x64x1xf32>
    %10 = stablehlo.divide %8, %9 : tensor<1x64x1xf32>
    %11 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<1x64x1xf32>) -> tensor<1x64x128xf32>
    %12 = stablehlo.subtract %x, %11 : tensor<1x64x128xf32>
    %cst_3 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<1x64x1xf32>
    %14 = stablehlo.add %10, %13 : tensor<1x64x1xf32>
    %15 = stablehlo.rsqrt %14 : tensor<1x64x1xf32>
    %16 = stablehlo.broadcast_in_dim %15, dims = [0, 1, 2] : (tensor<1x64x1xf32>) -> tensor<1x64x128xf32>
    %17 = stablehlo.multiply %12, %16 : tensor<1x64x128xf32>
    %18 = stablehlo.broadcast_in_dim %ln1_g, dims = [2] : (tensor<128xf32>) -> tensor<1x1x128xf32>
    %19 = stablehlo.broadcast_in_dim %18, dims = [0, 1, 2] : (tensor<1x1x128xf32>) -> tensor<1x64x128xf32>
    %20 = stablehlo.multiply %17, %19 : tensor<1x64x128xf32>
    %21 = stablehlo.broadcast_in_dim %ln1_b, dims = [2] : (tensor<128xf32>) -> tensor<1x1x128xf32>
    %22 = stablehlo.broadcast_in_dim %21, dims = [0, 1, 2] : (tensor<1x1x128xf32>) -> tensor<1x64x128xf32>
    %23 = stablehlo.add %20, %22 : tensor<1x64x128xf32>
    %24 = stablehlo.dot_general %23, %w_qkv, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x64x128xf32>, tensor<128x384xf32>) -> tensor<1x64x384xf32>
    %25 = stablehlo.broadcast_in_dim %b_qkv, dims = [2] : (tensor<384xf32>) -> tensor<1x1x384xf32>
    %26 = stablehlo.broadcast_in_dim %25, dims = [0, 1, 2] : (tensor<1x1x384xf32>) -> tensor<1x64x384xf32>
    %27 = stablehlo.add %24, %26 : tensor<1x64x384xf32>
    %28 = stablehlo.slice %27 [0:1, 0:64, 0:128] : (tensor<1x64x384xf32>) -> tensor<1x64x128xf32>
    %29 = stablehlo.slice %27 [0:1, 0:64, 128:256] : (tensor<1x64x384xf32>) -> tensor<1x64x128xf32>
    %30 = stablehlo.slice %27 [0:1, 0:64, 256:384] : (tensor<1x64x384xf32>) -> tensor<1x64x128xf32>
    %31 = stablehlo.reshape %28 : (tensor<1x64x128xf32>) -> tensor<1x64x4x32xf32>
    %32 = stablehlo.transpose %31, dims = [0, 2, 1, 3] : (tensor<1x64x4x32xf32>) -> tensor<1x4x64x32xf32>
    %33 = stablehlo.reshape %29 : (tensor<1x64x128xf32>) -> tensor<1x64x4x32xf32>
    %34 = stablehlo.transpose %33, dims = [0, 2, 1, 3] : (tensor<1x64x4x32xf32>) -> tensor<1x4x64x32xf32>
    %35 = stablehlo.reshape %30 : (tensor<1x64x128xf32>) -> tensor<1x64x4x32xf32>
    %36 = stablehlo.transpose %35, dims = [0, 2, 1, 3] : (tensor<1x64x4x32xf32>) -> tensor<1x4x64x32xf32>
    %37 = stablehlo.transpose %34, dims = [0, 1, 3, 2] : (tensor<1x4x64x32xf32>) -> tensor<1x4x32x64xf32>
    %38 = stablehlo.reshape %32 : (tensor<1x4x64x32xf32>) -> tensor<4x64x32xf32>
    %39 = stablehlo.reshape %37 : (tensor<1x4x32x64xf32>) -> tensor<4x32x64xf32>
    %40 = stablehlo.dot_general %38, %39, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x64x32xf32>, tensor<4x32x64xf32>) -> tensor<4x64x64xf32>
    %41 = stablehlo.broadcast_in_dim %40, dims = [1, 2, 3] : (tensor<4x64x64xf32>) -> tensor<1x4x64x64xf32>
    %cst_4 = stablehlo.constant dense<5.65685415> : tensor<f32>
    %42 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<1x4x64x64xf32>
    %43 = stablehlo.divide %41, %42 : tensor<1x4x64x64xf32>
    %c = stablehlo.constant dense<true> : tensor<i1>
    %44 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i1>) -> tensor<64x64xi1>
    %45 = call @tril(%44) : (tensor<64x64xi1>) -> tensor<64x64xi1>
    %cst_5 = stablehlo.constant dense<-1.000000e+09> : tensor<f32>
    %46 = call @_where(%45, %43, %cst_5) : (tensor<64x64xi1>, tensor<1x4x64x64xf32>, tensor<f32>) -> tensor<1x4x64x64xf32>
    %cst_6 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %47 = stablehlo.reduce(%46 init: %cst_6) applies stablehlo.maximum across dimensions = [3] : (tensor<1x4x64x64xf32>, tensor<f32>) -> tensor<1x4x64xf32>
    %cst_7 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %48 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<1x4x64xf32>
    %49 = stablehlo.maximum %48, %47 : tensor<1x4x64xf32>
    %50 = stablehlo.broadcast_in_dim %49, dims = [0, 1, 2] : (tensor<1x4x64xf32>) -> tensor<1x4x64x1xf32>
    %51 = stablehlo.broadcast_in_dim %50, dims = [0, 1, 2, 3] : (tensor<1x4x64x1xf32>) -> tensor<1x4x64x64xf32>
    %52 = stablehlo.subtract %46, %51 : tensor<1x4x64x64xf32>
    %53 = stablehlo.exponential %52 : tensor<1x4x64x64xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %54 = stablehlo.reduce(%53 init: %cst_8) applies stablehlo.add across dimensions = [3] : (tensor<1x4x64x64xf32>, tensor<f32>) -> tensor<1x4x64xf32>
    %55 = stablehlo.broadcast_in_dim %54, dims = [0, 1, 2] : (tensor<1x4x64xf32>) -> tensor<1x4x64x1xf32>
    %56 = stablehlo.broadcast_in_dim %55, dims = [0, 1, 2, 3] : (tensor<1x4x64x1xf32>) -> tensor<1x4x64x64xf32>
    %57 = stablehlo.divide %53, %56 : tensor<1x4x64x64xf32>
    %58 = stablehlo.reshape %57 : (tensor<1x4x64x64xf32>) -> tensor<4x64x64xf32>
    %59 = stablehlo.reshape %36 : (tensor<1x4x64x32xf32>) -> tensor<4x64x32xf32>
    %60 = stablehlo.dot_general %58, %59, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x64x64xf32>, tensor<4x64x32xf32>) -> tensor<4x64x32xf32>
    %61 = stablehlo.broadcast_in_dim %60, dims = [1, 2, 3] : (tensor<4x64x32xf32>) -> tensor<1x4x64x32xf32>
    %62 = stablehlo.transpose %61, dims = [0, 2, 1, 3] : (tensor<1x4x64x32xf32>) -> tensor<1x64x4x32xf32>
    %63 = stablehlo.reshape %62 : (tensor<1x64x4x32xf32>) -> tensor<1x64x128xf32>
    %64 = stablehlo.dot_general %63, %w_o, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x64x128xf32>, tensor<128x128xf32>) -> tensor<1x64x128xf32>
    %65 = stablehlo.add %x, %64 : tensor<1x64x128xf32>
    %66 = stablehlo.broadcast_in_dim %b_o, dims = [2] : (tensor<128xf32>) -> tensor<1x1x128xf32>
    %67 = stablehlo.broadcast_in_dim %66, dims = [0, 1, 2] : (tensor<1x1x128xf32>) -> tensor<1x64x128xf32>
    %68 = stablehlo.add %65, %67 : tensor<1x64x128xf32>
    %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %69 = stablehlo.reduce(%68 init: %cst_9) applies stablehlo.add across dimensions = [2] : (tensor<1x64x128xf32>, tensor<f32>) -> tensor<1x64xf32>
    %70 = stablehlo.broadcast_in_dim %69, dims = [0, 1] : (tensor<1x64xf32>) -> tensor<1x64x1xf32>
    %cst_10 = stablehlo.constant dense<1.280000e+02> : tensor<f32>
    %71 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<1x64x1xf32>
    %72 = stablehlo.divide %70, %71 : tensor<1x64x1xf32>
    %73 = stablehlo.broadcast_in_dim %72, dims = [0, 1, 2] : (tensor<1x64x1xf32>) -> tensor<1x64x128xf32>
    %74 = stablehlo.subtract %68, %73 : tensor<1x64x128xf32>
    %75 = stablehlo.multiply %74, %74 : tensor<1x64x128xf32>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %76 = stablehlo.reduce(%75 init: %cst_11) applies stablehlo.add across dimensions = [2] : (tensor<1x64x128xf32>, tensor<f32>) -> tensor<1x64xf32>
    %77 = stablehlo.broadcast_in_dim %76, dims = [0, 1] : (tensor<1x64xf32>) -> tensor<1x64x1xf32>
    %cst_12 = stablehlo.constant dense<1.280000e+02> : tensor<f32>
    %78 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<1x64x1xf32>
    %79 = stablehlo.divide %77, %78 : tensor<1x64x1xf32>
    %80 = stablehlo.broadcast_in_dim %72, dims = [0, 1, 2] : (tensor<1x64x1xf32>) -> tensor<1x64x128xf32>
    %81 = stablehlo.subtract %68, %80 : tensor<1x64x128xf32>
    %cst_13 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %82 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<1x64x1xf32>
    %83 = stablehlo.add %79, %82 : tensor<1x64x1xf32>
    %84 = stablehlo.rsqrt %83 : tensor<1x64x1xf32>
    %85 = stablehlo.broadcast_in_dim %84, dims = [0, 1, 2] : (tensor<1x64x1xf32>) -> tensor<1x64x128xf32>
    %86 = stablehlo.multiply %81, %85 : tensor<1x64x128xf32>
    %87 = stablehlo.broadcast_in_dim %ln2_g, dims = [2] : (tensor<128xf32>) -> tensor<1x1x128xf32>
    %88 = stablehlo.broadcast_in_dim %87, dims = [0, 1, 2] : (tensor<1x1x128xf32>) -> tensor<1x64x128xf32>
    %89 = stablehlo.multiply %86, %88 : tensor<1x64x128xf32>
    %90 = stablehlo.broadcast_in_dim %ln2_b, dims = [2] : (tensor<128xf32>) -> tensor<1x1x128xf32>
    %91 = stablehlo.broadcast_in_dim %90, dims = [0, 1, 2] : (tensor<1x1x128xf32>) -> tensor<1x64x128xf32>
    %92 = stablehlo.add %89, %91 : tensor<1x64x128xf32>
    %93 = stablehlo.dot_general %92, %w_fc, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x64x128xf32>, tensor<128x512xf32>) -> tensor<1x64x512xf32>
    %94 = stablehlo.broadcast_in_dim %b_fc, dims = [2] : (tensor<512xf32>) -> tensor<1x1x512xf32>
    %95 = stablehlo.broadcast_in_dim %94, dims = [0, 1, 2] : (tensor<1x1x512xf32>) -> tensor<1x64x512xf32>
    %96 = stablehlo.add %93, %95 : tensor<1x64x512xf32>
    %97 = stablehlo.multiply %96, %96 : tensor<1x64x512xf32>
    %98 = stablehlo.multiply %97, %96 : tensor<1x64x512xf32>
    %cst_14 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %99 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<1x64x512xf32>
    %100 = stablehlo.multiply %99, %98 : tensor<1x64x512xf32>
    %101 = stablehlo.add %96, %100 : tensor<1x64x512xf32>
    %cst_15 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %102 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<1x64x512xf32>
    %103 = stablehlo.multiply %102, %101 : tensor<1x64x512xf32>
    %104 = stablehlo.tanh %103 : tensor<1x64x512xf32>
    %cst_16 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %105 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<1x64x512xf32>
    %106 = stablehlo.add %105, %104 : tensor<1x64x512xf32>
    %cst_17 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %107 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<1x64x512xf32>
    %108 = stablehlo.multiply %107, %106 : tensor<1x64x512xf32>
    %109 = stablehlo.multiply %96, %108 : tensor<1x64x512xf32>
    %110 = stablehlo.dot_general %109, %w_proj, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x64x512xf32>, tensor<512x128xf32>) -> tensor<1x64x128xf32>
    %111 = stablehlo.add %68, %110 : tensor<1x64x128xf32>
    %112 = stablehlo.broadcast_in_dim %b_proj, dims = [2] : (tensor<128xf32>) -> tensor<1x1x128xf32>
    %113 = stablehlo.broadcast_in_dim %112, dims = [0, 1, 2] : (tensor<1x1x128xf32>) -> tensor<1x64x128xf32>
    %114 = stablehlo.add %111, %113 : tensor<1x64x128xf32>
    return %114 : tensor<1x64x128xf32>
  }
  func.func private @tril(%arg0: tensor<64x64xi1>) -> tensor<64x64xi1> {
    %0 = stablehlo.iota dim = 0 : tensor<64x64xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<64x64xi32>
    %2 = stablehlo.add %0, %1 : tensor<64x64xi32>
    %3 = stablehlo.iota dim = 1 : tensor<64x64xi32>
    %4 = stablehlo.compare GE, %2, %3, SIGNED : (tensor<64x64xi32>, tensor<64x64xi32>) -> tensor<64x64xi1>
    %c_0 = stablehlo.constant dense<false> : tensor<i1>
    %5 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i1>) -> tensor<64x64xi1>
    %6 = stablehlo.select %4, %arg0, %5 : tensor<64x64xi1>, tensor<64x64xi1>
    return %6 : tensor<64x64xi1>
  }
  func.func private @_where(%arg0: tensor<64x64xi1>, %arg1: tensor<1x4x64x64xf32>, %arg2: tensor<f32>) -> tensor<1x4x64x64xf32> {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [2, 3] : (tensor<64x64xi1>) -> tensor<1x4x64x64xi1>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<1x4x64x64xf32>
    %3 = stablehlo.select %1, %arg1, %2 : tensor<1x4x64x64xi1>, tensor<1x4x64x64xf32>
    return %3 : tensor<1x4x64x64xf32>
  }
}
