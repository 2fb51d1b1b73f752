#!/usr/bin/python3
"""Writes the hand-built ONNX test models of test/Import/ONNX.

    /usr/bin/python3 models/make_onnx_tests.py OUT_DIR [NAME ...]

Writes OUT_DIR/NAME.onnx for every NAME given (all models without names;
--list prints the names). Each model is a small graph built with
onnx.helper that exercises one group of ops, opset variants, the import-time
folding of shape computations, external data, or one bad input the importer
must reject with a one-line error. Node names are the lower-case op names, so
error messages and locations are predictable.

Uses Debian's /usr/bin/python3 with python3-onnx (1.12) and python3-numpy.
ONNX 1.12 knows opsets up to 17; models of newer opsets (Gelu-20,
ReduceMean-18, ...) are built by hand the same way, only not checked.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT
I64 = TensorProto.INT64
BOOL = TensorProto.BOOL
INT64_MAX = np.iinfo(np.int64).max


def tensor(name, shape, dtype=F32):
    """A graph input/output; shape None leaves it unknown."""
    return helper.make_tensor_value_info(name, dtype, shape)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def ints(name, values):
    return init(name, np.array(values, dtype=np.int64))


def const(output, array, name=None):
    return helper.make_node("Constant", [], [output], name=name or output,
                            value=numpy_helper.from_array(np.asarray(array)))


def node(op, inputs, outputs, name=None, **attrs):
    return helper.make_node(op, inputs, outputs, name=name or op.lower(),
                            **attrs)


def model(nodes, inputs, outputs, inits=(), opset=17, name="test"):
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              initializer=list(inits))
    m = helper.make_model(graph, producer_name="make_onnx_tests",
                          producer_version="1",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def weights(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(
        np.float32)


MODELS = {}


def register(fn):
    MODELS[fn.__name__] = fn
    return fn


# --- Ops ---------------------------------------------------------------------


@register
def elementwise():
    """Broadcasting arithmetic, unary activations, Where/Equal, Cast, Clip,
    Dropout (inference), Identity and the softmax family (opset 17)."""
    nodes = [
        node("Add", ["x", "b"], ["add"]),
        node("Sub", ["add", "x"], ["sub"]),
        node("Mul", ["sub", "b"], ["mul"]),
        node("Div", ["mul", "b"], ["div"]),
        const("two", np.array(2.0, np.float32)),
        node("Pow", ["div", "two"], ["pow"]),
        node("Sqrt", ["pow"], ["sqrt"]),
        node("Neg", ["sqrt"], ["neg"]),
        node("Exp", ["neg"], ["exp"]),
        node("Log", ["exp"], ["log"]),
        node("Tanh", ["log"], ["tanh"]),
        node("Erf", ["tanh"], ["erf"]),
        node("Sigmoid", ["erf"], ["sigmoid"]),
        node("Relu", ["sigmoid"], ["relu"]),
        node("LeakyRelu", ["relu"], ["leaky"], alpha=0.2),
        node("Equal", ["x", "b"], ["equal"]),
        node("Where", ["equal", "x", "leaky"], ["where"]),
        const("lo", np.array(-1.0, np.float32)),
        const("hi", np.array(1.0, np.float32)),
        node("Clip", ["where", "lo", "hi"], ["clip"]),
        node("Clip", ["clip", "", "hi"], ["clip_max"], name="clip_max"),
        const("ratio", np.array(0.25, np.float32)),
        node("Dropout", ["clip_max", "ratio"], ["dropout"], seed=7),
        node("Identity", ["dropout"], ["identity"]),
        node("Softmax", ["identity"], ["softmax"]),
        node("LogSoftmax", ["softmax"], ["y"], axis=0),
        node("Cast", ["x"], ["xi"], to=TensorProto.INT32),
        node("Cast", ["xi"], ["xd"], to=TensorProto.DOUBLE, name="cast2"),
    ]
    return model(nodes, [tensor("x", [2, 3])],
                 [tensor("y", None), tensor("xd", None)],
                 [init("b", weights(1, 3))])


@register
def gelu20():
    """Gelu (opset 20), both approximations."""
    nodes = [node("Gelu", ["x"], ["g"]),
             node("Gelu", ["g"], ["y"], approximate="tanh", name="gelu_tanh")]
    return model(nodes, [tensor("x", [2, 3])], [tensor("y", None)], opset=20)


@register
def gelu17():
    """Gelu does not exist at opset 17 (error)."""
    return model([node("Gelu", ["x"], ["y"])], [tensor("x", [2, 3])],
                 [tensor("y", None)], opset=17)


@register
def matmul_gemm():
    """MatMul with batch broadcasting and 1-D operands, Gemm variants."""
    nodes = [
        node("MatMul", ["x", "w"], ["mm"]),
        node("MatMul", ["v", "w"], ["mv"], name="matmul_vec"),
        node("Gemm", ["a", "wg", "c"], ["g1"], transB=1, alpha=0.5, beta=2.0),
        node("Gemm", ["at", "wg2"], ["g2"], transA=1, name="gemm_nobias"),
    ]
    return model(
        nodes,
        [tensor("x", [2, 5, 4]), tensor("v", [4]), tensor("a", [3, 4]),
         tensor("at", [4, 3])],
        [tensor("mm", None), tensor("mv", None), tensor("g1", None),
         tensor("g2", None)],
        [init("w", weights(2, 4, 6)), init("wg", weights(3, 5, 4)),
         init("c", weights(4, 5)), init("wg2", weights(5, 4, 2))])


@register
def conv_pool():
    """Conv (explicit pads, groups, strides, dilations, SAME_UPPER,
    SAME_LOWER, VALID), BatchNormalization, pooling (opset 17)."""
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1],
             kernel_shape=[3, 3]),
        node("BatchNormalization", ["c1", "s", "bb", "m", "var"], ["bn"],
             epsilon=1e-3, momentum=0.8),
        node("Relu", ["bn"], ["r"]),
        node("Conv", ["r", "w2"], ["c2"], group=2, strides=[2, 2],
             auto_pad="SAME_UPPER", name="conv_same_upper"),
        node("Conv", ["c2", "w3"], ["c3"], dilations=[2, 2],
             auto_pad="SAME_LOWER", name="conv_same_lower"),
        node("Conv", ["c3", "w4"], ["c4"], auto_pad="VALID",
             name="conv_valid"),
        node("MaxPool", ["c4", ], ["mp"], kernel_shape=[2, 2],
             strides=[1, 1], pads=[0, 0, 1, 1], ceil_mode=1),
        node("AveragePool", ["mp"], ["ap"], kernel_shape=[3, 3],
             pads=[1, 1, 1, 1], count_include_pad=1),
        node("MaxPool", ["ap"], ["mp2"], kernel_shape=[2, 2], strides=[2, 2],
             auto_pad="SAME_UPPER", name="maxpool_same"),
        node("GlobalAveragePool", ["mp2"], ["y"]),
    ]
    return model(
        nodes, [tensor("x", [1, 4, 9, 9])], [tensor("y", None)],
        [init("w1", weights(6, 8, 4, 3, 3)), init("b1", weights(7, 8)),
         init("s", weights(8, 8)), init("bb", weights(9, 8)),
         init("m", weights(10, 8)),
         init("var", np.abs(weights(11, 8)) + 0.5),
         init("w2", weights(12, 8, 4, 3, 3)), init("w3", weights(13, 8, 8, 3, 3)),
         init("w4", weights(14, 6, 8, 2, 2))])


@register
def avgpool19():
    """AveragePool at opset 19 with unit dilations (accepted)."""
    return model([node("AveragePool", ["x"], ["y"], kernel_shape=[2],
                       dilations=[1])],
                 [tensor("x", [1, 2, 6])], [tensor("y", None)], opset=19)


@register
def avgpool19_dilated():
    """AveragePool at opset 19 with dilations (not supported)."""
    return model([node("AveragePool", ["x"], ["y"], kernel_shape=[2],
                       dilations=[2])],
                 [tensor("x", [1, 2, 6])], [tensor("y", None)], opset=19)


@register
def layernorm():
    """LayerNormalization (opset 17): default axis, explicit axis, no bias."""
    nodes = [
        node("LayerNormalization", ["x", "g", "b"], ["ln"], epsilon=1e-6),
        node("LayerNormalization", ["ln", "g2"], ["y"], axis=1,
             name="layernorm_nobias"),
    ]
    return model(nodes, [tensor("x", [2, 3, 4])], [tensor("y", None)],
                 [init("g", weights(20, 4)), init("b", weights(21, 4)),
                  init("g2", weights(22, 3, 4))])


def reduce_model(opset):
    axes_input = opset >= 18
    nodes, inits = [], [ints("axes_sum", [-1])]
    if axes_input:
        inits += [ints("axes_mean", [1, -1]), ints("axes_max", [0])]
        nodes += [node("ReduceMean", ["x", "axes_mean"], ["mean"]),
                  node("ReduceMax", ["x", "axes_max"], ["max"], keepdims=0),
                  node("ReduceMean", ["x"], ["mean_all"], keepdims=0,
                       name="reducemean_all"),
                  node("ReduceMax", ["x"], ["noop"], noop_with_empty_axes=1,
                       name="reducemax_noop")]
    else:
        nodes += [node("ReduceMean", ["x"], ["mean"], axes=[1, -1]),
                  node("ReduceMax", ["x"], ["max"], axes=[0], keepdims=0),
                  node("ReduceMean", ["x"], ["mean_all"], keepdims=0,
                       name="reducemean_all"),
                  node("Identity", ["x"], ["noop"])]
    nodes.append(node("ReduceSum", ["x", "axes_sum"], ["sum"], keepdims=0))
    outs = [tensor(n, None) for n in ["mean", "max", "mean_all", "noop",
                                      "sum"]]
    return model(nodes, [tensor("x", [2, 3, 4])], outs, inits, opset=opset)


@register
def reduce13():
    """Reductions at opset 13: ReduceMean/Max axes attribute, ReduceSum
    axes input."""
    return reduce_model(13)


@register
def reduce18():
    """Reductions at opset 18: axes inputs, noop_with_empty_axes."""
    return reduce_model(18)


@register
def shape_ops():
    """Reshape (0, -1), Flatten, Transpose, Squeeze/Unsqueeze (axes inputs),
    Concat, Split (split input), Slice (negative step, clamping), Gather,
    Expand (opset 13)."""
    nodes = [
        node("Reshape", ["x", "shape"], ["rs"]),
        node("Flatten", ["rs"], ["fl"], axis=-1),
        node("Transpose", ["x"], ["tr"]),
        node("Unsqueeze", ["x", "uaxes"], ["us"]),
        node("Squeeze", ["us", "saxes"], ["sq"]),
        node("Concat", ["x", "sq"], ["cat"], axis=-1),
        node("Split", ["cat", "split"], ["s0", "s1", "s2"], axis=2),
        node("Slice", ["x", "starts", "ends", "axes", "steps"], ["sl"]),
        node("Gather", ["x", "idx"], ["ga"], axis=1),
        node("Expand", ["e", "eshape"], ["ex"]),
        node("Squeeze", ["one"], ["sq_all"], name="squeeze_all"),
    ]
    inits = [
        ints("shape", [0, -1]), ints("uaxes", [0, -1]), ints("saxes", [0, 4]),
        ints("split", [2, 3, 3]), ints("starts", [-1, 1]),
        ints("ends", [-INT64_MAX, INT64_MAX]), ints("axes", [1, 2]),
        ints("steps", [-2, 2]), ints("idx", [[0, -1]]), ints("eshape", [2, 1, 3]),
    ]
    outs = [tensor(n, None) for n in
            ["fl", "tr", "s0", "s1", "s2", "sl", "ga", "ex", "sq_all"]]
    return model(nodes, [tensor("x", [2, 3, 4]), tensor("e", [4, 1]),
                         tensor("one", [1, 3, 1])], outs, inits, opset=13)


@register
def static_batch():
    """A static batch of 2 baked into constants the way a static torch
    export does (docs/Importer.md "Static batch"): Reshape targets (one
    whose head count equals the batch, one that merges the batch with the
    heads and back), an Expand shape, a Slice over the whole batch, and
    constants that are the same for every sample (an added mask, a
    concatenated pad)."""
    rng = np.random.default_rng(3)
    mask = np.broadcast_to(rng.standard_normal((1, 8, 32)),
                           (2, 8, 32)).astype(np.float32)
    pad = np.broadcast_to(rng.standard_normal((1, 8, 4)),
                          (2, 8, 4)).astype(np.float32)
    nodes = [
        node("Reshape", ["x", "heads"], ["r1"], name="split_heads"),
        node("Transpose", ["r1"], ["t1"], perm=[0, 2, 1, 3], name="t1"),
        node("Reshape", ["t1", "merged"], ["r2"], name="merge_batch"),
        node("Reshape", ["r2", "unmerged"], ["r3"], name="unmerge_batch"),
        node("Transpose", ["r3"], ["t2"], perm=[0, 2, 1, 3], name="t2"),
        node("Reshape", ["t2", "joined"], ["r4"], name="join_heads"),
        const("mask", mask),
        node("Add", ["r4", "mask"], ["a"], name="add_mask"),
        node("ReduceMean", ["x"], ["m"], axes=[1], keepdims=1),
        node("Expand", ["m", "eshape"], ["ex"]),
        node("Add", ["a", "ex"], ["a2"], name="add_mean"),
        node("Slice", ["a2", "starts", "ends", "axes"], ["sl"]),
        const("pad", pad),
        node("Concat", ["sl", "pad"], ["y"], axis=2),
    ]
    inits = [
        ints("heads", [2, 8, 2, 16]), ints("merged", [4, 8, 16]),
        ints("unmerged", [2, 2, 8, 16]), ints("joined", [2, 8, 32]),
        ints("eshape", [2, 8, 32]), ints("starts", [0]), ints("ends", [2]),
        ints("axes", [0]),
    ]
    return model(nodes, [tensor("x", [2, 8, 32])], [tensor("y", [2, 8, 36])],
                 inits)


@register
def static_batch_chain():
    """A static batch of 2 read through shape computations (Shape, Gather,
    Unsqueeze, Concat, ConstantOfShape), which re-fold at the new batch,
    next to one literal Reshape target, which is rewritten."""
    nodes = [
        node("Shape", ["x"], ["s"]),
        node("Gather", ["s", "zero"], ["b"], axis=0),
        node("Unsqueeze", ["b", "uaxes"], ["bu"]),
        node("Concat", ["bu", "rest"], ["target"], axis=0),
        node("Reshape", ["x", "target"], ["r"], name="reshape_chain"),
        node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),
        node("Reshape", ["t", "literal"], ["r2"], name="reshape_literal"),
        node("Reshape", ["r2", "s"], ["r3"], name="reshape_shape"),
        helper.make_node("ConstantOfShape", ["s"], ["half"],
                         name="constantofshape",
                         value=numpy_helper.from_array(
                             np.array([0.5], dtype=np.float32))),
        node("Mul", ["r3", "half"], ["y"]),
    ]
    inits = [ints("zero", 0), ints("uaxes", [0]), ints("rest", [8, 2, 16]),
             ints("literal", [2, 2, 128])]
    return model(nodes, [tensor("x", [2, 8, 32])], [tensor("y", [2, 8, 32])],
                 inits)


@register
def static_batch_mixed():
    """A constant that differs between the 2 samples of a static batch:
    not the batch, cannot be re-specialized."""
    c = np.arange(8, dtype=np.float32).reshape(2, 4)
    return model([const("c", c), node("Add", ["x", "c"], ["y"])],
                 [tensor("x", [2, 4])], [tensor("y", [2, 4])])


@register
def static_batch_weight():
    """A weight with the static batch's size at the batch dimension."""
    return model([node("Mul", ["x", "w"], ["y"])], [tensor("x", [2, 4])],
                 [tensor("y", [2, 4])], [init("w", weights(5, 2, 4))])


@register
def static_batch_split():
    """A Reshape that spreads the batch over two dimensions ([2, 3] ->
    [3, 2]): no dimension of the result is the batch."""
    return model([node("Reshape", ["x", "shape"], ["y"])],
                 [tensor("x", [2, 3])], [tensor("y", [3, 2])],
                 [ints("shape", [3, 2])])


@register
def static_batch_interleaved():
    """A Reshape after a Transpose that moves the batch: the output's leading
    2 is not where the samples went ([32, 2, 8] -> [2, 8, 32] puts them
    inside the last dimension)."""
    return model([node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
                  node("Reshape", ["t", "shape"], ["y"])],
                 [tensor("x", [2, 8, 32])], [tensor("y", [2, 8, 32])],
                 [ints("shape", [2, 8, 32])])


@register
def static_batch_two():
    """Two graph inputs with the static batch 2."""
    return model([node("Add", ["x", "z"], ["y"])],
                 [tensor("x", [2, 4]), tensor("z", [2, 4])],
                 [tensor("y", [2, 4])])


@register
def reshape14():
    """Reshape allowzero=1 (opset 14): a 0 is a real zero-size dimension."""
    return model([node("Reshape", ["x", "shape"], ["y"], allowzero=1)],
                 [tensor("x", [0, 3])], [tensor("y", None)],
                 [ints("shape", [3, 0])], opset=14)


@register
def split18():
    """Split at opset 18: num_outputs with an uneven last chunk, and equal
    parts without split sizes."""
    nodes = [node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3),
             node("Split", ["x"], ["d", "e"], axis=0, name="split_even")]
    return model(nodes, [tensor("x", [4, 7])],
                 [tensor(n, None) for n in "abcde"], opset=18)


@register
def indexing_ops():
    """GatherElements (negative axis), ScatterElements (add), GatherND
    (batch_dims), ScatterND, Scatter (opset 9 form is not used: opset 13),
    Tile, DepthToSpace (CRD), SpaceToDepth, Compress (constant condition),
    OneHot (negative axis), Pad (reflect, edge, constant with a run-time
    value, negative pads), Einsum (batched matmul, diagonal)."""
    nodes = [
        node("GatherElements", ["x", "gi"], ["ge"], axis=-1),
        node("ScatterElements", ["x", "gi", "ge"], ["se"], axis=1,
             reduction="add"),
        node("GatherND", ["d3", "ni"], ["gn"], batch_dims=1),
        node("ScatterND", ["x", "si", "su"], ["sn"]),
        node("Tile", ["x", "reps"], ["ti"]),
        node("DepthToSpace", ["img", ], ["d2s"], blocksize=2, mode="CRD"),
        node("SpaceToDepth", ["d2s"], ["s2d"], blocksize=2),
        node("Compress", ["x", "cond"], ["co"], axis=1),
        node("OneHot", ["ids", "depth", "vals"], ["oh"], axis=-2),
        node("Pad", ["x", "rpads"], ["pr"], mode="reflect"),
        node("Pad", ["x", "epads"], ["pe"], name="pad_edge", mode="edge"),
        node("Pad", ["x", "cpads", "cval"], ["pc"], name="pad_constant"),
        node("Einsum", ["a", "b"], ["bmm"], equation="bij,bjk->bik"),
        node("Einsum", ["sq"], ["diag"], name="einsum_diag",
             equation="ii->i"),
    ]
    inits = [
        ints("gi", [[0, -1], [2, 1], [3, 3]]), ints("ni", [[[0, 1]], [[-1, 0]]]),
        ints("si", [[1], [-3]]), ints("reps", [2, 1]),
        init("cond", np.array([True, False, True], np.bool_)),
        ints("depth", 4), ints("rpads", [1, 2, 0, 1]),
        ints("epads", [0, 1, 2, 0]), ints("cpads", [-1, 1, 0, 2]),
    ]
    ins = [tensor("x", [3, 4]), tensor("d3", [2, 3, 5]), tensor("su", [2, 4]),
           tensor("img", [1, 8, 2, 3]), tensor("ids", [2, 3], I64),
           tensor("vals", [2]), tensor("cval", []), tensor("a", [2, 3, 4]),
           tensor("b", [2, 4, 5]), tensor("sq", [3, 3])]
    outs = [tensor(n, None) for n in
            ["ge", "se", "gn", "sn", "ti", "s2d", "co", "oh", "pr", "pe", "pc",
             "bmm", "diag"]]
    return model(nodes, ins, outs, inits, opset=16)


@register
def trilu_eyelike():
    """Trilu on a run-time input (lower, k = -1) and EyeLike (k = 1, int64)."""
    nodes = [node("Trilu", ["x", "k"], ["tl"], upper=0),
             node("EyeLike", ["x"], ["eye"], k=1, dtype=I64)]
    return model(nodes, [tensor("x", [3, 4])],
                 [tensor("tl", None), tensor("eye", None)], [ints("k", -1)],
                 opset=14)


@register
def layer_ops():
    """ConvTranspose (stride, pads, output_padding, group, bias), Resize
    (linear half_pixel with scales; nearest asymmetric with sizes), Upsample
    (opset 9, Constant scales), InstanceNormalization, LRN,
    MeanVarianceNormalization, GlobalMaxPool, LayerNormalization with its
    Mean and InvStdDev outputs."""
    nodes = [
        node("ConvTranspose", ["x", "w", "ctb"], ["ct"], strides=[2, 2],
             pads=[1, 0, 0, 0], output_padding=[1, 0], group=2),
        node("Resize", ["x", "", "scales"], ["rl"], mode="linear"),
        node("Resize", ["x", "", "", "sizes"], ["rn"], name="resize_nearest",
             coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        node("InstanceNormalization", ["x", "s", "bias"], ["inorm"]),
        node("LRN", ["x"], ["lrn"], size=3),
        node("MeanVarianceNormalization", ["x"], ["mvn"]),
        node("GlobalMaxPool", ["x"], ["gmp"]),
        node("LayerNormalization", ["x", "g"], ["ln", "mean", "inv"], axis=2),
    ]
    inits = [init("w", weights(1, 2, 3, 3, 2)), init("ctb", weights(5, 6)),
             init("bias", weights(2, 2)),
             init("s", weights(3, 2)), init("g", weights(4, 3, 3)),
             ints("sizes", [1, 2, 5, 4])]
    scales = const("scales", np.array([1, 1, 2, 1.5], np.float32))
    outs = [tensor(n, None) for n in
            ["ct", "rl", "rn", "inorm", "lrn", "mvn", "gmp", "ln", "mean",
             "inv"]]
    return model([scales] + nodes, [tensor("x", [1, 2, 3, 3])], outs, inits,
                 opset=17)


@register
def upsample9_const():
    """Upsample (opset 9) with its scales from a Constant node."""
    return old_model([const("scales", np.array([1, 1, 2, 3], np.float32)),
                      node("Upsample", ["x", "scales"], ["y"])],
                     [tensor("x", [1, 1, 2, 2])], [tensor("y", None)],
                     opset=9, ir_version=4)


@register
def gather_elements_oob():
    """GatherElements with a constant index past the axis (error)."""
    return model([node("GatherElements", ["x", "i"], ["y"], axis=1)],
                 [tensor("x", [2, 3])], [tensor("y", None)],
                 [ints("i", [[0, 3], [1, 2]])])


@register
def einsum_broadcast():
    """Einsum broadcasting a batch dimension (not supported)."""
    return model([node("Einsum", ["a", "b"], ["y"], equation="bij,bjk->bik")],
                 [tensor("a", [1, 2, 3]), tensor("b", [4, 3, 2])],
                 [tensor("y", None)], opset=13)


@register
def pad_reflect_large():
    """Reflect padding wider than the axis (not supported)."""
    return model([node("Pad", ["x", "p"], ["y"], mode="reflect")],
                 [tensor("x", [2, 3])], [tensor("y", None)],
                 [ints("p", [0, 3, 0, 0])], opset=13)


@register
def opset21():
    """A small graph at opset 21 (the newest supported)."""
    nodes = [node("Unsqueeze", ["x", "axes"], ["u"]),
             node("ReduceSum", ["u", "axes"], ["y"], keepdims=0)]
    return model(nodes, [tensor("x", [2, 3])], [tensor("y", None)],
                 [ints("axes", [0])], opset=21)


# --- Folding -----------------------------------------------------------------


@register
def folding():
    """A PyTorch-style shape chain on a dynamic input x[batch, 4], fixed with
    --input-shape x=3x4. Everything but the final compute ops folds: Shape,
    Gather, Unsqueeze, Concat, Range, ConstantOfShape, Trilu, Cast, Equal,
    Where, Less, Not, Slice, Squeeze, integer Add/Mul/Div/Sub, Expand."""
    nodes = [
        node("Shape", ["x"], ["shp"]),
        const("zero", np.array(0, np.int64)),
        node("Gather", ["shp", "zero"], ["batch"]),          # 3
        const("four", np.array(4, np.int64)),
        node("Mul", ["batch", "four"], ["b4"]),             # 12
        node("Div", ["b4", "four"], ["b4d"]),               # 3
        node("Sub", ["b4d", "batch"], ["z"]),               # 0
        node("Add", ["z", "batch"], ["batch2"]),            # 3
        node("Unsqueeze", ["batch2", "ax0"], ["b1"]),       # [3]
        node("Concat", ["b1", "minus1"], ["newshape"], axis=0),  # [3, -1]
        node("Reshape", ["x", "newshape"], ["xr"]),         # compute
        node("Shape", ["x"], ["shp2"], start=-1, name="shape_tail"),  # [4]
        node("Squeeze", ["shp2", "ax0"], ["n"]),            # 4
        const("one", np.array(1, np.int64)),
        node("Range", ["zero", "n", "one"], ["pos"]),       # [0..3]
        node("Unsqueeze", ["n", "ax0"], ["n1"]),
        node("Concat", ["n1", "n1"], ["nn"], axis=0, name="concat_nn"),
        node("ConstantOfShape", ["nn"], ["ones"],
             value=numpy_helper.from_array(np.array([1], np.float32))),
        node("Trilu", ["ones"], ["upper"], upper=1),
        node("Cast", ["upper"], ["mask"], to=BOOL),
        node("Not", ["mask"], ["lower"]),
        node("Less", ["pos", "n"], ["lt"]),
        node("Equal", ["pos", "zero"], ["is0"]),
        node("Where", ["is0", "n", "pos"], ["w"]),
        node("Slice", ["shp", "s_start", "s_end"], ["tail"]),  # [4]
        node("Expand", ["pos", "tail"], ["pos_e"]),          # folds
        node("Cast", ["pos_e"], ["pos_f"], to=F32, name="cast_pos"),
        node("Add", ["xr", "pos_f"], ["sum"], name="add_compute"),
        node("Transpose", ["sum"], ["sum_t"], perm=[1, 0]),
        node("MatMul", ["sum_t", "sum"], ["sum_sq"], name="matmul_compute"),
        node("Where", ["lower", "sum_sq", "fill"], ["masked"],
             name="where_compute"),
    ]
    inits = [ints("ax0", [0]), ints("minus1", [-1]), ints("s_start", [1]),
             ints("s_end", [2]), init("fill", np.array(-1e9, np.float32))]
    outs = [tensor("masked", None), tensor("lt", None), tensor("w", None)]
    return model(nodes, [tensor("x", ["batch", 4])], outs, inits)


@register
def external():
    """A two-layer MLP whose weights live in external data
    (external.onnx.data next to the model); w1 and b1 hold predictable
    values (arange / 8, arange / 2)."""
    nodes = [node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
             node("Relu", ["h"], ["r"]),
             node("MatMul", ["r", "w2"], ["y"])]
    return model(nodes, [tensor("x", [2, 8])], [tensor("y", None)],
                 [init("w1", (np.arange(128, dtype=np.float32) / 8).reshape(
                     16, 8)),
                  init("b1", np.arange(16, dtype=np.float32) / 2),
                  init("w2", weights(32, 16, 4))])


@register
def unsorted():
    """Nodes stored in reverse order (acyclic): the importer sorts them."""
    nodes = [node("Relu", ["h"], ["y"]),
             node("Mul", ["x", "x"], ["h"])]
    return model(nodes, [tensor("x", [3])], [tensor("y", None)])


@register
def weights_small_large():
    """A small weight (dense), a large one (dense_resource), an integer
    initializer (constant) and an unused one (dropped)."""
    nodes = [node("Add", ["x", "small"], ["a"]),
             node("MatMul", ["a", "large"], ["m"]),
             node("Gather", ["m", "index"], ["y"], axis=1)]
    return model(nodes, [tensor("x", [2, 4])], [tensor("y", None)],
                 [init("small", np.arange(4, dtype=np.float32)),
                  init("large", weights(40, 4, 100)),
                  ints("index", [3, 1]),
                  init("unused", np.ones(3, np.float32))])


@register
def constants():
    """Constant nodes in every supported form (value, value_float(s),
    value_int(s)) feeding compute and folding; a float16 weight."""
    nodes = [
        helper.make_node("Constant", [], ["cf"], name="cf", value_float=0.5),
        helper.make_node("Constant", [], ["cfs"], name="cfs",
                         value_floats=[1.0, 2.0, 3.0]),
        helper.make_node("Constant", [], ["ci"], name="ci", value_int=3),
        helper.make_node("Constant", [], ["cis"], name="cis",
                         value_ints=[3, 1]),
        node("Mul", ["x", "cf"], ["m"]),
        node("Add", ["m", "cfs"], ["a"]),
        node("Reshape", ["a", "cis"], ["r"]),
        node("Unsqueeze", ["ci", "ax"], ["ci1"]),
        node("Concat", ["ci1", "ci1"], ["shape33"], axis=0),
        node("Expand", ["h", "shape33"], ["y"]),
    ]
    return model(nodes, [tensor("x", [3])],
                 [tensor("r", None), tensor("y", None)],
                 [ints("ax", [0]),
                  init("h", np.array([[1.5], [2.5], [-1.0]], np.float16))])


@register
def unused_input_and_zero_size():
    """An unused graph input stays in the signature; a zero-size weight."""
    nodes = [node("Concat", ["x", "empty"], ["y"], axis=0),
             node("Add", ["z", "empty"], ["z2"])]
    return model(nodes, [tensor("x", [2]), tensor("unused", [5]),
                         tensor("z", [0])],
                 [tensor("y", None), tensor("z2", None)],
                 [init("empty", np.zeros([0], np.float32))])


# --- Bad inputs --------------------------------------------------------------


@register
def misspelt_attr():
    """Conv with 'kernel_shapes': the ONNX checker rejects the attribute."""
    return model([node("Conv", ["x", "w"], ["y"], kernel_shapes=[1, 1])],
                 [tensor("x", [1, 1, 2, 2])], [tensor("y", None)],
                 [init("w", np.ones([1, 1, 1, 1], np.float32))])


@register
def unnamed_unknown():
    """An unnamed node of an unknown op: named by its index."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Frobnicate", ["r"], ["y"])]
    return model(nodes, [tensor("x", [2])], [tensor("y", None)])


@register
def custom_domain():
    """A node of a custom domain."""
    m = model([helper.make_node("Gelu", ["x"], ["y"], name="fused_gelu",
                                domain="com.microsoft")],
              [tensor("x", [2])], [tensor("y", None)])
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m


@register
def huge_dims():
    """A Constant whose dims claim 10^12 elements but hold 3 values."""
    value = TensorProto(name="v", data_type=TensorProto.INT32,
                        dims=[1000000, 1000000], int32_data=[1, 2, 3])
    return model([helper.make_node("Constant", [], ["c"], name="c",
                                   value=value),
                  node("Cast", ["c"], ["y"], to=F32)],
                 [], [tensor("y", None)])


@register
def big_constant():
    """ConstantOfShape asking for 10^12 elements: over the folding budget."""
    nodes = [node("ConstantOfShape", ["shape"], ["c"]),
             node("Add", ["x", "c"], ["y"])]
    return model(nodes, [tensor("x", [1])], [tensor("y", None)],
                 [ints("shape", [1000000, 1000000])])



@register
def unknown_op():
    return model([node("FooBar", ["x"], ["y"], name="mystery")],
                 [tensor("x", [2])], [tensor("y", None)])


@register
def dynamic():
    return model([node("Relu", ["x"], ["y"])],
                 [tensor("x", ["batch", 16])], [tensor("y", None)])


@register
def missing_init():
    """'w' is neither a graph input, an initializer nor a node output."""
    return model([node("MatMul", ["x", "w"], ["y"])],
                 [tensor("x", [2, 3])], [tensor("y", None)])


@register
def cycle():
    nodes = [node("Add", ["x", "b"], ["a"], name="first"),
             node("Relu", ["a"], ["b"], name="second"),
             node("Identity", ["a"], ["y"])]
    return model(nodes, [tensor("x", [2])], [tensor("y", None)])


@register
def shape_mismatch():
    return model([node("Add", ["x", "b"], ["y"], name="bad_add")],
                 [tensor("x", [2, 3])], [tensor("y", None)],
                 [init("b", weights(50, 4))])


@register
def matmul_mismatch():
    return model([node("MatMul", ["x", "w"], ["y"], name="bad_matmul")],
                 [tensor("x", [2, 3])], [tensor("y", None)],
                 [init("w", weights(51, 4, 5))])


@register
def bn_training():
    return model([node("BatchNormalization", ["x", "s", "b", "m", "v"],
                       ["y"], training_mode=1)],
                 [tensor("x", [2, 3, 4])], [tensor("y", None)],
                 [init(n, np.ones(3, np.float32)) for n in "sbmv"], opset=15)


@register
def dropout_training():
    nodes = [const("ratio", np.array(0.1, np.float32)),
             const("training", np.array(True)),
             node("Dropout", ["x", "ratio", "training"], ["y"])]
    return model(nodes, [tensor("x", [4])], [tensor("y", None)])


@register
def layernorm_mean():
    return model([node("LayerNormalization", ["x", "g"], ["y", "mean"])],
                 [tensor("x", [2, 4])],
                 [tensor("y", None), tensor("mean", None)],
                 [init("g", np.ones(4, np.float32))])


@register
def maxpool_indices():
    return model([node("MaxPool", ["x"], ["y", "idx"], kernel_shape=[2])],
                 [tensor("x", [1, 1, 4])],
                 [tensor("y", None), tensor("idx", None, I64)])


@register
def reshape_dynamic():
    """Reshape whose shape is computed from a graph input's values."""
    return model([node("Reshape", ["x", "s"], ["y"])],
                 [tensor("x", [4]), tensor("s", [2], I64)], [tensor("y", None)])


@register
def opset11():
    return model([node("Relu", ["x"], ["y"])], [tensor("x", [2])],
                 [tensor("y", None)], opset=11)


@register
def opset22():
    return model([node("Relu", ["x"], ["y"])], [tensor("x", [2])],
                 [tensor("y", None)], opset=22)


@register
def bad_raw_data():
    """An initializer whose raw data is shorter than its dimensions need."""
    w = init("w", np.ones(4, np.float32))
    w.raw_data = w.raw_data[:6]
    return model([node("Add", ["x", "w"], ["y"])], [tensor("x", [4])],
                 [tensor("y", None)], [w])


# --- Older opsets ------------------------------------------------------------


def old_model(nodes, inputs, outputs, inits=(), opset=6, ir_version=3):
    """Before IR version 4 every initializer is also a graph input."""
    if ir_version < 4:
        inputs = list(inputs) + [
            helper.make_tensor_value_info(i.name, i.data_type, list(i.dims))
            for i in inits]
        inits = list(inits)
    m = model(nodes, inputs, outputs, inits, opset=opset)
    m.ir_version = ir_version
    return m


@register
def legacy_opset6():
    """Opset-6 forms: binary broadcast/axis attributes, Softmax coerced to
    2-D, BatchNormalization is_test, Gemm broadcast, Clip and Dropout
    attributes."""
    nodes = [
        node("Add", ["x", "b"], ["add"], broadcast=1, axis=1),
        node("Mul", ["add", "x"], ["mul"]),
        node("Sub", ["mul", "s"], ["sub"], broadcast=1),
        node("Softmax", ["sub"], ["softmax"], axis=1),
        node("LogSoftmax", ["sub"], ["logsoftmax"], axis=2),
        node("BatchNormalization", ["img", "scale", "bias", "mean", "var"],
             ["bn"], is_test=1, epsilon=1e-3),
        node("Gemm", ["a", "w", "c"], ["gemm"], broadcast=1, transB=1),
        node("Clip", ["gemm"], ["clip"], min=0.0),
        node("Dropout", ["clip"], ["dropout"], is_test=1, ratio=0.25),
    ]
    return old_model(
        nodes,
        [tensor("x", [2, 3, 4]), tensor("img", [1, 3, 2, 2]),
         tensor("a", [2, 5])],
        [tensor("softmax", None), tensor("logsoftmax", None),
         tensor("bn", None), tensor("dropout", None)],
        [init("b", weights(1, 3)), init("s", weights(2, 4)),
         init("scale", weights(3, 3)), init("bias", weights(4, 3)),
         init("mean", weights(5, 3)), init("var", np.ones(3, np.float32)),
         init("w", weights(6, 4, 5)), init("c", weights(7, 4))])


@register
def legacy_opset1():
    """Opset-1 forms: Reshape's shape, Slice's bounds and Pad's paddings as
    attributes, Cast to a type name, Concat's default axis 1."""
    nodes = [
        node("Reshape", ["x"], ["reshape"], shape=[3, 4]),
        node("Slice", ["reshape"], ["slice"], starts=[1], ends=[1000],
             axes=[1]),
        node("Pad", ["slice"], ["pad"], paddings=[0, 0, 0, 0]),
        node("Concat", ["pad", "pad"], ["concat"]),
        node("Cast", ["concat"], ["y"], to="DOUBLE"),
    ]
    return old_model(nodes, [tensor("x", [2, 6])], [tensor("y", None)],
                     opset=1)


@register
def legacy_opset9():
    """Opset-9 pooling without ceil_mode/dilations, Squeeze/Unsqueeze/Split
    and Reduce* axes attributes."""
    nodes = [
        node("MaxPool", ["x"], ["maxpool"], kernel_shape=[2, 2],
             strides=[2, 2]),
        node("AveragePool", ["maxpool"], ["avgpool"], kernel_shape=[2, 2],
             pads=[1, 1, 1, 1], count_include_pad=1),
        node("Split", ["avgpool"], ["s0", "s1"], axis=1, split=[1, 2]),
        node("Squeeze", ["s0"], ["squeeze"], axes=[1]),
        node("Unsqueeze", ["squeeze"], ["unsqueeze"], axes=[0]),
        node("ReduceMean", ["s1"], ["mean"], axes=[2, 3], keepdims=0),
    ]
    return old_model(nodes, [tensor("x", [1, 3, 4, 4])],
                     [tensor("unsqueeze", None), tensor("mean", None)],
                     opset=9, ir_version=4)


@register
def bn_spatial0():
    """BatchNormalization-7 with per-element statistics."""
    return old_model(
        [node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"],
              spatial=0)],
        [tensor("x", [1, 2, 3])], [tensor("y", None)],
        [init(n, np.ones((2, 3), np.float32)) for n in "sbmv"], opset=7)


@register
def legacy_broadcast_rank():
    """An opset-6 Add whose B has a higher rank than A."""
    return old_model([node("Add", ["x", "b"], ["y"], broadcast=1)],
                     [tensor("x", [3]), tensor("b", [2, 3])],
                     [tensor("y", None)])


@register
def upsample9():
    return old_model([node("Upsample", ["x", "scales"], ["y"])],
                     [tensor("x", [1, 1, 2, 2])], [tensor("y", None)],
                     [init("scales", np.array([1, 1, 2, 2], np.float32))],
                     opset=9, ir_version=4)


@register
def ml_only():
    """Only a node of a non-default domain pipedream does not compile
    (ai.onnx.ml), and no default-domain opset."""
    m = model([helper.make_node("Normalizer", ["x"], ["y"], name="normalizer",
                                norm="MAX", domain="ai.onnx.ml")],
              [tensor("x", [2, 3])], [tensor("y", None)])
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("ai.onnx.ml", 1))
    return m


@register
def complex_input():
    return model([node("Add", ["x", "x"], ["y"])],
                 [tensor("x", [2], TensorProto.COMPLEX64)], [tensor("y", None)])


@register
def sequence_input():
    seq = helper.make_tensor_sequence_value_info("x", F32, None)
    return model([node("Identity", ["x"], ["y"])], [seq],
                 [tensor("y", None)])


# --- Writing -----------------------------------------------------------------

UNCHECKED = {"gelu17", "huge_dims", "misspelt_attr", "unnamed_unknown", "custom_domain", "unknown_op", "missing_init", "cycle",
             "shape_mismatch", "matmul_mismatch", "layernorm_mean",
             "maxpool_indices", "unsorted", "opset11", "opset22", "bad_raw_data",
             "dynamic", "reshape_dynamic",
             "sequence_input"}


def check(m):
    """onnx.checker on a copy: ONNX 1.12 wants a shape on every graph input
    and output, the models here leave output shapes to the importer."""
    c = onnx.ModelProto()
    c.CopyFrom(m)
    for info in list(c.graph.input) + list(c.graph.output):
        if not info.type.tensor_type.HasField("shape"):
            info.type.tensor_type.shape.SetInParent()
    onnx.checker.check_model(c)


def write(name, out_dir):
    m = MODELS[name]()
    path = os.path.join(out_dir, name + ".onnx")
    max_opset = max((o.version for o in m.opset_import if o.domain == ""),
                    default=0)
    if name not in UNCHECKED and max_opset <= 17:
        check(m)
    if name == "external":
        onnx.save_model(m, path, save_as_external_data=True,
                        all_tensors_to_one_file=True,
                        location="external.onnx.data", size_threshold=0)
    else:
        onnx.save_model(m, path)


def write_bad_files(out_dir):
    """truncated.onnx (the first half of a valid model) and random.onnx."""
    m = MODELS["matmul_gemm"]().SerializeToString()
    with open(os.path.join(out_dir, "truncated.onnx"), "wb") as f:
        f.write(m[: len(m) // 2])
    rng = np.random.default_rng(1234)
    with open(os.path.join(out_dir, "random.onnx"), "wb") as f:
        f.write(rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())


def main(argv):
    if len(argv) >= 2 and argv[1] == "--list":
        print("\n".join(sorted(MODELS) + ["truncated", "random"]))
        return 0
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir, names = argv[1], argv[2:] or sorted(MODELS) + ["bad_files"]
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        if name in ("truncated", "random", "bad_files"):
            write_bad_files(out_dir)
        elif name in MODELS:
            write(name, out_dir)
        else:
            print(f"unknown model {name!r}; see --list", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
