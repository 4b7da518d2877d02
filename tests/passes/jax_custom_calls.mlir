// RUN: passes=jax-custom-calls
// Sharding constraints and reshards are their operand on one device; the mesh stays.
module {
  sdy.mesh @mesh = <["x"=1, "y"=1]>
  func.func @main() -> tensor<2x3xf32> {
    %c = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
    %0 = sdy.sharding_constraint %c <@mesh, [{"x"}, {?}]> : tensor<2x3xf32>
    %1 = stablehlo.exponential %0 : tensor<2x3xf32>
    %2 = sdy.reshard %1 <@mesh, [{}, {"y"}p0]> : tensor<2x3xf32>
    return %2 : tensor<2x3xf32>
  }
}
// CHECK: sdy.mesh @mesh = <["x"=1, "y"=1]>
// CHECK-NOT: sdy.sharding_constraint
// CHECK: stablehlo.exponential
// CHECK-NOT: sdy.reshard
// CHECK: return

// -----
// A manual computation whose manual axes have size 1 is its body, inlined.
module {
  sdy.mesh @mesh = <["x"=1]>
  func.func @main() -> tensor<4xf32> {
    %c = stablehlo.constant dense<[1.0, -2.0, 3.0, -4.0]> : tensor<4xf32>
    %0 = sdy.manual_computation(%c) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%a: tensor<4xf32>) {
      %1 = stablehlo.abs %a : tensor<4xf32>
      %2 = stablehlo.add %1, %a : tensor<4xf32>
      sdy.return %2 : tensor<4xf32>
    } : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
// CHECK-NOT: sdy.manual_computation
// CHECK: stablehlo.abs
// CHECK: stablehlo.add
// CHECK-NOT: sdy.return

// -----
// NO-INTERPRET: a body on shards of a 2-device mesh needs two devices and stays.
module {
  sdy.mesh @mesh = <["x"=2]>
  func.func @main() -> tensor<4xf32> {
    %c = stablehlo.constant dense<[1.0, -2.0, 3.0, -4.0]> : tensor<4xf32>
    %0 = sdy.manual_computation(%c) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%a: tensor<2xf32>) {
      %1 = stablehlo.abs %a : tensor<2xf32>
      sdy.return %1 : tensor<2xf32>
    } : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
// CHECK: sdy.manual_computation
// CHECK: sdy.return

// -----
// GSPMD annotations of equal types are the identity; ApproxTopK becomes a stable sort and a slice.
func.func @top_k_gt_f32_comparator(%a: tensor<f32>, %b: tensor<f32>, %i: tensor<i32>, %j: tensor<i32>) -> tensor<i1> {
  %0 = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
  return %0 : tensor<i1>
}
func.func @main() -> (tensor<2x2xf32>, tensor<2x2xi32>) {
  %x = stablehlo.constant dense<[[3.0, 1.0, 4.0, 1.5], [9.0, 2.0, 6.0, 5.0]]> : tensor<2x4xf32>
  %s = stablehlo.custom_call @Sharding(%x) {backend_config = "", mhlo.sharding = "{replicated}"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = stablehlo.custom_call @SPMDFullToShardShape(%s) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %f = stablehlo.custom_call @SPMDShardToFullShape(%m) {backend_config = "", mhlo.sharding = "{replicated}"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %iota = stablehlo.iota dim = 1 : tensor<2x4xi32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %neg = stablehlo.constant dense<-1> : tensor<i32>
  %0:2 = stablehlo.custom_call @ApproxTopK(%f, %iota, %ninf, %neg) {backend_config = "", called_computations = [@top_k_gt_f32_comparator], mhlo.backend_config = {aggregate_to_topk = true, is_fallback = true, recall_target = 0.949999988 : f32, reduction_dim = 1 : i64, reduction_input_size_override = -1 : i64, top_k = 2 : i64}} : (tensor<2x4xf32>, tensor<2x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<2x2xf32>, tensor<2x2xi32>)
  return %0#0, %0#1 : tensor<2x2xf32>, tensor<2x2xi32>
}
// CHECK-LABEL: func.func @main
// CHECK-NOT: custom_call
// CHECK: "stablehlo.sort"
// CHECK: stablehlo.compare GT
// CHECK: is_stable = true
// CHECK: stablehlo.slice
// CHECK: stablehlo.slice
