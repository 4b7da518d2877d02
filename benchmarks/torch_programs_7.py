"""A seventh sweep through torch.compile(backend="axle"): models from real libraries, as users
compile them, built from configs with small sizes and random weights (nothing is downloaded).

HuggingFace transformers (v5): BERT sequence classification with a padded attention mask (eager and
sdpa attention, and once with the config's own dropout 0.1 in training), GPT-2 LM head with labels,
LLaMA (RoPE, RMSNorm, grouped-query attention; sdpa, and eager attention with right padding),
Mistral's sliding window, Mixtral's MoE (transformers' default grouped_mm experts with the router's
load-balancing loss; batched_mm experts), Qwen2 (qkv bias, tied embeddings, padding), Gemma 2 (logit
soft-capping, alternating sliding windows), Phi (partial rotary, parallel block, qk LayerNorm), T5
(relative position bias, encoder-decoder), BART, ViT, CLIP (text and vision towers, contrastive loss),
Whisper (conv1d front end, encoder-decoder), Wav2Vec2 CTC (conv feature encoder frozen as fine-tuning
does, grouped positional convolution), DistilBERT masked LM, RoBERTa token classification,
DeBERTa-v2 (disentangled c2p / p2c attention, log buckets), and two inference decode steps: LLaMA
on a DynamicCache rebuilt from past keys / values, Qwen2 on a StaticCache written in place.
timm: ResNet-18 / -50, EfficientNet-B0, MobileNetV3-Small, ConvNeXt-atto (conv MLP), ViT-Tiny,
DeiT-Tiny distilled, Swin (shifted window attention), RegNetY-200MF, DenseNet-121 (frozen
BatchNorm), MLP-Mixer, LeViT-128S (attention biases, BatchNorm in linear layers), PoolFormerV2-S12,
CoaT-Lite-Tiny; all at 64-128 pixels, BatchNorm in training but where noted.

Same harness as torch_programs_2.py (outputs, gradients of one training step and updated buffers
against eager PyTorch, interleaved timing with medians, the bridge's fallback warnings, Dynamo's
graph breaks), plus: the training forward timed alone beside the step, the first compiled calls'
times (compiles), integer outputs (greedy tokens) compared exactly, programs run for inference only
(checked and timed under torch.no_grad()), a closing table and geometric mean. Dropout and stochastic
depth are off (their random draws would differ from eager's) but in the one program that keeps them,
whose numbers are not compared; parameters initialized to one constant (zero-initialized heads and
residual BatchNorms, LayerScale 1e-6) are perturbed so that no check is of exact zeros.

The libraries are not the project's dependencies and must not change its torch, numpy or jax: they
live in a folder of their own (AXLE_SWEEP_LIBS, default /work/sweep-libs) put first on sys.path,
installed without dependencies so that pip brings no torch:

    pip install --no-deps --target /work/sweep-libs transformers timm huggingface_hub tokenizers \
        safetensors regex pyyaml typer click shellingham rich markdown-it-py mdurl annotated-doc \
        httpx2 httpcore2 anyio sniffio idna h11 certifi truststore hf-xet torchvision==0.28.0

(torchvision: the release made for torch 2.13; timm imports its Python parts. PyPI's wheel links
the CUDA torch, so its C++ ops do not load on the CPU torch; _libraries() then defines the two op
schemas its import needs.) Without the folder, every program is reported SKIPPED with the reason.

Usage: AXLE_NUM_THREADS=1 python benchmarks/torch_programs_7.py [name,name,...]
(about 7 minutes on 2 cores)"""
import importlib.util
import os
import sys
import time
import warnings

os.environ["HF_HUB_OFFLINE"] = "1"  # configs only: nothing is fetched
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
LIBS = os.environ.get("AXLE_SWEEP_LIBS", "/work/sweep-libs")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_programs as T  # noqa: E402  (sets AXLE_NUM_THREADS / torch threads, registers the backend)
from torch_programs import _rel, g  # noqa: E402
from torch_programs_2 import buffer_snapshot, grads_and_times, ints, sweep, tensor_outputs as _outs  # noqa: E402
from axle.torch.backend import STATS, AxleFallbackWarning  # noqa: E402


def _libraries() -> str:
    """Puts LIBS on sys.path and imports transformers and timm: '' if they import, else why not."""
    if not os.path.isdir(LIBS):
        return (f"{LIBS} is absent: install transformers and timm there without their dependencies "
                f"(see this file's docstring), or point AXLE_SWEEP_LIBS at such a folder")
    if LIBS not in sys.path:
        sys.path.insert(0, LIBS)
    spec = importlib.util.find_spec("torchvision")  # timm imports torchvision.ops.misc (FrozenBatchNorm2d)
    if spec is not None and spec.submodule_search_locations:
        import glob
        so = glob.glob(os.path.join(spec.submodule_search_locations[0], "_C*.so"))
        try:
            torch.ops.load_library(so[0])
        except (IndexError, OSError):
            # PyPI's torchvision links the CUDA torch: with a CPU torch its C++ ops do not load, and
            # its import then fails registering fake kernels for two ops it never defined. Their
            # schemas are enough (nothing here calls them).
            global _TV_LIB
            _TV_LIB = torch.library.Library("torchvision", "DEF")
            for op in ("nms", "qnms"):
                _TV_LIB.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            importlib.import_module("timm")
            import transformers
        transformers.logging.set_verbosity_error()
    except Exception as e:  # noqa: BLE001
        return f"transformers / timm do not import from {LIBS}: {type(e).__name__}: {str(e)[:300]}"
    return ""


_TV_LIB = None
MISSING = _libraries()
P, EVAL, prog = sweep()
INFER = set()  # checked and timed under torch.no_grad(), no training step
RANDOM = set()  # dropout in training: timed, fallbacks noted, numbers not compared
TOL = 1e-4  # max relative difference (to the largest |value|) counted as correct in float32


def infer(name):
    """Marks program `name` inference only (eval mode, no_grad)."""
    def deco(f):
        INFER.add(name)
        EVAL.add(name)
        return f
    return deco


def random_program(name):
    """Marks program `name` random (dropout in training): not compared."""
    def deco(f):
        RANDOM.add(name)
        return f
    return deco


class HF(nn.Module):
    """A transformers model called with keyword arguments (the inputs in `keys`' order), returning
    the tensors `outs` of its ModelOutput as a tuple."""

    def __init__(self, model, keys, outs=("loss", "logits")):
        super().__init__()
        self.m, self.keys, self.outs = model, tuple(keys), tuple(outs)

    def forward(self, *args):
        o = self.m(**dict(zip(self.keys, args)))
        return tuple(o[k] for k in self.outs)


def no_dropout(cfg):
    """Every dropout / layer-drop / SpecAugment probability of a config (and its sub-configs) to
    0: training-mode forwards then match eager's exactly."""
    for k, v in list(vars(cfg).items()):
        if isinstance(v, float) and ("dropout" in k or "pdrop" in k or "layerdrop" in k or k.startswith("mask_")
                                     and k.endswith("_prob")):
            setattr(cfg, k, 0.0)
        elif hasattr(v, "to_dict") and hasattr(v, "model_type"):
            no_dropout(v)
    return cfg


def wake(model):
    """Every parameter initialized to one constant (zero-initialized classifier heads and last
    BatchNorms of residual branches, LayerScale at 1e-6, norm weights and biases) plus 0.1 N(0, 1):
    with them as initialized, whole branches give exactly zero outputs and gradients on both sides,
    and their checks are empty."""
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for p in model.parameters():
            if p.is_floating_point() and p.numel() and bool((p == p.flatten()[0]).all()):
                p.add_(0.1 * torch.randn(p.shape, generator=gen))
    return model


def hf(cls, cfg_cls, attn=None, experts=None, dropout=False, **kw):
    """transformers.`cls` from a transformers.`cfg_cls`(**kw) without dropout (unless `dropout`:
    the config's own), random weights; `attn` / `experts`: the attention / MoE experts
    implementation (None: transformers' default, sdpa / grouped_mm)."""
    import transformers
    cfg = getattr(transformers, cfg_cls)(**kw)
    cfg = cfg if dropout else no_dropout(cfg)
    if attn is not None:
        cfg._attn_implementation = attn
    if experts is not None:
        cfg._experts_implementation = experts
    torch.manual_seed(0)
    return wake(getattr(transformers, cls)(cfg))


def tm(name, **kw):
    """timm.create_model(name) with random weights, without dropout or stochastic depth (random in
    training: their Bernoulli draws would differ from eager's)."""
    import timm
    torch.manual_seed(0)
    try:
        return wake(timm.create_model(name, pretrained=False, **{"drop_rate": 0.0, "drop_path_rate": 0.0, **kw}))
    except TypeError:  # a model without stochastic depth (DenseNet)
        torch.manual_seed(0)
        return wake(timm.create_model(name, pretrained=False, **{"drop_rate": 0.0, **kw}))


def padded_mask(b, s, seed=0, lo=None):
    """An attention mask [b, s] of ones with each row but the first right-padded by a random amount."""
    lens = ints(s - (lo or s // 4), b, seed=seed) + (lo or s // 4)
    lens[0] = s
    return (torch.arange(s)[None] < lens[:, None]).long()


def img(b, c, h, w=None):
    return g(b, c, h, w or h)


# ---------------------------------------------------------------- transformers

V = 2000  # vocabulary of the language models
LM = dict(vocab_size=V, hidden_size=128, intermediate_size=352, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, max_position_embeddings=256, use_cache=False)


def lm_batch(b=4, s=64, seed=1, pad=False):
    """input_ids, attention_mask, labels (the ids, -100 where padded) for a causal LM."""
    ids = ints(V, b, s, seed=seed)
    mask = padded_mask(b, s, seed=seed + 1) if pad else torch.ones(b, s, dtype=torch.long)
    return ids, mask, ids.masked_fill(mask == 0, -100)


def bert_cls(attn, dropout=False):
    m = hf("BertForSequenceClassification", "BertConfig", attn, dropout=dropout, vocab_size=V, hidden_size=128,
           num_hidden_layers=2, num_attention_heads=4, intermediate_size=512, max_position_embeddings=128,
           num_labels=3)
    b, s = 8, 64
    return HF(m, ("input_ids", "attention_mask", "token_type_ids", "labels")), (
        ints(V, b, s, seed=1), padded_mask(b, s, seed=2), (torch.arange(s) >= s // 2).long().expand(b, s),
        ints(3, b, seed=3))


@prog("hf_bert_seqcls_padded_eager")
def _():
    return bert_cls("eager")


@prog("hf_bert_seqcls_padded_sdpa")
def _():
    return bert_cls("sdpa")


@prog("hf_bert_seqcls_config_dropout_0.1")  # fine-tuning as configured: BertConfig's dropout 0.1 in training
@random_program("hf_bert_seqcls_config_dropout_0.1")
def _():
    return bert_cls("sdpa", dropout=True)


@prog("hf_gpt2_lmhead_labels")
def _():
    m = hf("GPT2LMHeadModel", "GPT2Config", vocab_size=V, n_positions=128, n_embd=128, n_layer=2, n_head=4,
           use_cache=False)
    ids, mask, labels = lm_batch()
    return HF(m, ("input_ids", "labels")), (ids, labels)


def llama(attn, pad):
    m = hf("LlamaForCausalLM", "LlamaConfig", attn, **LM)
    return HF(m, ("input_ids", "attention_mask", "labels")), lm_batch(pad=pad)


@prog("hf_llama_gqa_rope_sdpa")
def _():
    return llama("sdpa", False)


@prog("hf_llama_gqa_rope_eager_padded")
def _():
    return llama("eager", True)


@prog("hf_mistral_sliding_window_sdpa")
def _():
    m = hf("MistralForCausalLM", "MistralConfig", "sdpa", sliding_window=16, **LM)
    ids, mask, labels = lm_batch()
    return HF(m, ("input_ids", "labels")), (ids, labels)


def mixtral(experts, aux):
    m = hf("MixtralForCausalLM", "MixtralConfig", "sdpa", experts, num_local_experts=4, num_experts_per_tok=2,
           output_router_logits=aux, router_aux_loss_coef=0.02, **dict(LM, intermediate_size=176))
    ids, mask, labels = lm_batch(b=2, s=32)
    return HF(m, ("input_ids", "labels"), ("loss", "logits", "aux_loss")[:3 if aux else 2]), (ids, labels)


@prog("hf_mixtral_moe_grouped_mm_aux_loss")  # transformers' default experts implementation, the router's
def _():  # load-balancing loss
    return mixtral(None, True)


@prog("hf_mixtral_moe_batched_mm")  # each token's experts' weights gathered, bmm; no load-balancing loss
def _():
    return mixtral("batched_mm", False)


@prog("hf_qwen2_qkv_bias_tied")
def _():
    m = hf("Qwen2ForCausalLM", "Qwen2Config", **dict(LM, tie_word_embeddings=True))
    return HF(m, ("input_ids", "attention_mask", "labels")), lm_batch(pad=True)


@prog("hf_gemma2_softcap_alternating_sliding")
def _():
    m = hf("Gemma2ForCausalLM", "Gemma2Config", "eager", head_dim=32, query_pre_attn_scalar=32, sliding_window=16,
           attn_logit_softcapping=50.0, final_logit_softcapping=30.0, **LM)
    ids, mask, labels = lm_batch()
    return HF(m, ("input_ids", "labels")), (ids, labels)


@prog("hf_phi_partial_rotary_parallel")
def _():
    m = hf("PhiForCausalLM", "PhiConfig", "sdpa", partial_rotary_factor=0.5, qk_layernorm=True,
           **dict(LM, num_key_value_heads=4, intermediate_size=512))
    ids, mask, labels = lm_batch()
    return HF(m, ("input_ids", "labels")), (ids, labels)


@prog("hf_t5_seq2seq_relative_bias")
def _():
    m = hf("T5ForConditionalGeneration", "T5Config", vocab_size=V, d_model=128, d_kv=32, d_ff=256, num_layers=2,
           num_decoder_layers=2, num_heads=4, feed_forward_proj="gated-gelu", use_cache=False,
           decoder_start_token_id=0, pad_token_id=0)
    b = 4
    return HF(m, ("input_ids", "attention_mask", "labels")), (ints(V, b, 64, seed=1), padded_mask(b, 64, seed=2),
                                                               ints(V, b, 24, lo=1, seed=3))


@prog("hf_bart_seq2seq")
def _():
    m = hf("BartForConditionalGeneration", "BartConfig", "sdpa", vocab_size=V, d_model=128, encoder_layers=2,
           decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=256,
           decoder_ffn_dim=256, max_position_embeddings=128, use_cache=False)
    b = 4
    return HF(m, ("input_ids", "attention_mask", "labels")), (ints(V, b, 64, seed=1), padded_mask(b, 64, seed=2),
                                                               ints(V, b, 24, lo=3, seed=3))


@prog("hf_vit_image_classification")
def _():
    m = hf("ViTForImageClassification", "ViTConfig", "sdpa", image_size=64, patch_size=8, hidden_size=128,
           num_hidden_layers=2, num_attention_heads=4, intermediate_size=512, num_labels=10)
    return HF(m, ("pixel_values", "labels")), (img(8, 3, 64), ints(10, 8, seed=1))


@prog("hf_clip_contrastive_text_vision")
def _():
    m = hf("CLIPModel", "CLIPConfig", "sdpa", projection_dim=64,
           text_config=dict(vocab_size=V, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                            num_attention_heads=4, max_position_embeddings=32),
           vision_config=dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                              image_size=64, patch_size=8))
    b = 8
    return HF(m, ("input_ids", "attention_mask", "pixel_values", "return_loss"), ("loss", "logits_per_image")), (
        ints(V, b, 32, seed=1), padded_mask(b, 32, seed=2), img(b, 3, 64), True)


@prog("hf_whisper_conv1d_encoder_decoder")
def _():
    m = hf("WhisperForConditionalGeneration", "WhisperConfig", "sdpa", vocab_size=V, num_mel_bins=80,
           encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, d_model=128,
           encoder_ffn_dim=256, decoder_ffn_dim=256, max_source_positions=100, max_target_positions=64,
           use_cache=False, decoder_start_token_id=1, pad_token_id=0)
    b = 4
    return HF(m, ("input_features", "labels")), (g(b, 80, 200), ints(V, b, 24, lo=2, seed=1))


@prog("hf_wav2vec2_ctc_frozen_conv_features")
def _():
    m = hf("Wav2Vec2ForCTC", "Wav2Vec2Config", "sdpa", vocab_size=32, hidden_size=128, num_hidden_layers=2,
           num_attention_heads=4, intermediate_size=256, conv_dim=(64, 64, 64, 64, 64),
           conv_stride=(5, 2, 2, 2, 2), conv_kernel=(10, 3, 3, 3, 2), num_conv_pos_embeddings=16,
           num_conv_pos_embedding_groups=4, apply_spec_augment=False, ctc_loss_reduction="mean",
           ctc_zero_infinity=True, pad_token_id=0)
    m.freeze_feature_encoder()  # as CTC fine-tuning does; trained, the encoder sets requires_grad on a tensor in
    b = 4  # its forward, and Dynamo leaves its frames to eager (3 of 8 graph breaks)
    labels = ints(31, b, 12, lo=1, seed=1)
    labels[1:, 9:] = -100
    return HF(m, ("input_values", "labels")), (g(b, 8000) * 0.1, labels)


@prog("hf_distilbert_masked_lm")
def _():
    m = hf("DistilBertForMaskedLM", "DistilBertConfig", "sdpa", vocab_size=V, dim=128, n_layers=2, n_heads=4,
           hidden_dim=512, max_position_embeddings=128)
    b, s = 8, 64
    ids = ints(V, b, s, seed=1)
    labels = ids.masked_fill(torch.rand(b, s, generator=torch.Generator().manual_seed(2)) > 0.15, -100)
    return HF(m, ("input_ids", "attention_mask", "labels")), (ids, padded_mask(b, s, seed=3), labels)


@prog("hf_roberta_token_classification")
def _():
    m = hf("RobertaForTokenClassification", "RobertaConfig", "eager", vocab_size=V, hidden_size=128,
           num_hidden_layers=2, num_attention_heads=4, intermediate_size=512, max_position_embeddings=130,
           num_labels=9, pad_token_id=1)
    b, s = 8, 64
    mask = padded_mask(b, s, seed=2)
    ids = ints(V, b, s, lo=3, seed=1).masked_fill(mask == 0, 1)  # padding_idx 1: RoBERTa's positions skip it
    return HF(m, ("input_ids", "attention_mask", "labels")), (ids, mask, ints(9, b, s, seed=3).masked_fill(mask == 0,
                                                                                                          -100))


@prog("hf_deberta_v2_disentangled_attention")
def _():
    m = hf("DebertaV2ForSequenceClassification", "DebertaV2Config", vocab_size=V, hidden_size=128,
           num_hidden_layers=2, num_attention_heads=4, intermediate_size=512, max_position_embeddings=128,
           relative_attention=True, pos_att_type=["c2p", "p2c"], position_buckets=32, max_relative_positions=64,
           position_biased_input=False, norm_rel_ebd="layer_norm", share_att_key=True, num_labels=3)
    b, s = 8, 64
    return HF(m, ("input_ids", "attention_mask", "labels")), (ints(V, b, s, seed=1), padded_mask(b, s, seed=2),
                                                               ints(3, b, seed=3))


class Decode(nn.Module):
    """One greedy decode step of a causal LM on a DynamicCache rebuilt from the past keys and values
    (prefilled eagerly): the last position's logits, the next tokens, the grown cache."""

    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, ids, mask, pos, *kv):
        from transformers import DynamicCache
        cache = DynamicCache([(kv[i], kv[i + 1]) for i in range(0, len(kv), 2)])
        o = self.m(input_ids=ids, attention_mask=mask, position_ids=pos, cache=cache, use_cache=True)
        logits = o.logits[:, -1]
        return (logits, logits.argmax(-1), *(t for lay in o.cache.layers for t in (lay.keys, lay.values)))


@prog("hf_llama_kv_cache_decode_step")
@infer("hf_llama_kv_cache_decode_step")
def _():
    m = hf("LlamaForCausalLM", "LlamaConfig", "sdpa", **dict(LM, use_cache=True, num_hidden_layers=4)).eval()
    b, s = 8, 96
    ids = ints(V, b, s, seed=1)
    mask = padded_mask(b, s, seed=2).flip(1)  # left padding, as generate pads
    pos = (mask.cumsum(1) - 1).clamp(min=0)
    with torch.no_grad():
        o = m(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True)
    nxt = o.logits[:, -1].argmax(-1, keepdim=True)
    kv = [t.clone() for lay in o.cache.layers for t in (lay.keys, lay.values)]
    mask = torch.cat([mask, torch.ones(b, 1, dtype=torch.long)], 1)
    return Decode(m), (nxt, mask, pos[:, -1:] + 1, *kv)


class StaticDecode(nn.Module):
    """One greedy decode step on transformers' StaticCache (preallocated keys / values written in
    place by index_copy_, the torch.compile path of generate(cache_implementation="static")): the
    caches are this module's buffers, each call rewinds them to the prefill's length first."""

    def __init__(self, model, cache, length):
        super().__init__()
        self.m, self.cache, self.length = model, cache, length
        for i, lay in enumerate(cache.layers):
            self.register_buffer(f"k{i}", lay.keys)
            self.register_buffer(f"v{i}", lay.values)

    def forward(self, ids, mask, pos):
        for lay in self.cache.layers:
            lay.cumulative_length.fill_(self.length)
        o = self.m(input_ids=ids, attention_mask=mask, position_ids=pos, cache=self.cache, use_cache=True)
        logits = o.logits[:, -1]
        return logits, logits.argmax(-1)


@prog("hf_qwen2_static_cache_decode_step")
@infer("hf_qwen2_static_cache_decode_step")
def _():
    from transformers import StaticCache
    m = hf("Qwen2ForCausalLM", "Qwen2Config", "sdpa", **dict(LM, use_cache=True, num_hidden_layers=4)).eval()
    b, s, total = 8, 96, 128
    ids = ints(V, b, s, seed=1)
    mask = padded_mask(b, s, seed=2).flip(1)
    pos = (mask.cumsum(1) - 1).clamp(min=0)
    cache = StaticCache(config=m.config, max_cache_len=total)
    with torch.no_grad():
        o = m(input_ids=ids, attention_mask=F.pad(mask, (0, total - s)), position_ids=pos, cache=cache,
              use_cache=True)
    nxt = o.logits[:, -1].argmax(-1, keepdim=True)
    mask = F.pad(mask, (0, total - s))
    mask[:, s] = 1
    return StaticDecode(m, cache, s), (nxt, mask, pos[:, -1:] + 1)


# ---------------------------------------------------------------- timm

@prog("timm_resnet18_64px")
def _():
    return tm("resnet18", num_classes=10), (img(4, 3, 64),)


@prog("timm_resnet50_64px")
def _():
    return tm("resnet50", num_classes=10), (img(2, 3, 64),)


@prog("timm_efficientnet_b0_96px")
def _():
    return tm("efficientnet_b0", num_classes=10), (img(2, 3, 96),)


@prog("timm_mobilenetv3_small_100_96px")
def _():
    return tm("mobilenetv3_small_100", num_classes=10), (img(8, 3, 96),)


@prog("timm_convnext_atto_64px")
def _():
    return tm("convnext_atto", num_classes=10), (img(4, 3, 64),)


@prog("timm_vit_tiny_patch16_64px")
def _():
    return tm("vit_tiny_patch16_224", img_size=64, num_classes=10), (img(8, 3, 64),)


@prog("timm_deit_tiny_distilled_64px")  # training: (head, distillation head)
def _():
    return tm("deit_tiny_distilled_patch16_224", img_size=64, num_classes=10), (img(4, 3, 64),)


@prog("timm_swin_window_attention_112px")
def _():
    return tm("swin_tiny_patch4_window7_224", img_size=112, embed_dim=48, depths=(2, 2, 2, 2),
              num_heads=(2, 4, 8, 16), num_classes=10), (img(2, 3, 112),)


@prog("timm_regnety_002_64px")
def _():
    return tm("regnety_002", num_classes=10), (img(8, 3, 64),)


@prog("timm_densenet121_frozen_bn_64px", eval=True)  # training BatchNorm over 2 x 2 x 2 values in the last
def _():  # block is ill-conditioned: float32 eager itself is off float64 by 1e-2 for some inputs
    return tm("densenet121", num_classes=10), (img(2, 3, 64),)


@prog("timm_mlp_mixer_small_64px")
def _():
    from timm.models.mlp_mixer import MlpMixer
    torch.manual_seed(0)
    return wake(MlpMixer(img_size=64, patch_size=8, num_blocks=4, embed_dim=128, num_classes=10)), (img(8, 3, 64),)


@prog("timm_levit_128s_attention_bias_128px")
def _():
    return tm("levit_128s", img_size=128, num_classes=10), (img(4, 3, 128),)


@prog("timm_poolformerv2_s12_64px")
def _():
    return tm("poolformerv2_s12", num_classes=10), (img(4, 3, 64),)


@prog("timm_coat_lite_tiny_64px")
def _():
    return tm("coat_lite_tiny", img_size=64, num_classes=10), (img(4, 3, 64),)


# ---------------------------------------------------------------- the harness

RESULTS = {}


def run(name, width=40):
    """One program: forward outputs (integer ones exactly), one training step's gradients and the
    buffers a forward updates against eager; the first compiled forward and backward (compile
    times); interleaved medians of the training forward alone and of the whole step (zero_grad,
    forward, loss.backward), or of the forward under no_grad for an inference program; and notes:
    fallbacks, graph breaks, frames Dynamo left to eager, graphs that never reached axle. A
    RANDOM program (dropout in training) is timed and its notes kept, its numbers not compared."""
    if MISSING:
        print(f"{name:{width}s} SKIPPED: {MISSING}", flush=True)
        return
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    torch.manual_seed(0)
    model, args = P[name]()
    training, random = name not in INFER, name in RANDOM
    model.train(name not in EVAL)
    comp = torch.compile(model, backend="axle")
    bufs, restore = buffer_snapshot(model)  # BatchNorm running statistics, KV caches
    calls0 = STATS["axle_calls"]
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always", AxleFallbackWarning)
        with torch.set_grad_enabled(training):
            want = model(*args)
            bw = [b.clone() for b in bufs]
            restore()
            t0 = time.perf_counter()
            got = comp(*args)
            t_fwd = time.perf_counter() - t0
        # updated buffers relative to the largest |value| among them (as gradients are judged against
        # the largest gradient): a running mean of ~1e-9 (a BatchNorm after a BatchNorm-ed 1x1
        # convolution) is rounding noise whatever its own relative difference
        bscale = max((float(w.nan_to_num().abs().max()) for w in bw), default=0.0) + 1e-30
        berr = max((float((b.nan_to_num() - w.nan_to_num()).abs().max()) / bscale for b, w in zip(bufs, bw)),
                   default=0.0)
        fl = [(a, b) for a, b in zip(_outs(got), _outs(want)) if b.is_floating_point()]
        err = max((_rel(a, b) for a, b in fl), default=0.0)
        bad_ints = sum(int(not torch.equal(a, b)) for a, b in zip(_outs(got), _outs(want)) if not b.is_floating_point())
        gerr, t_bwd, fa, fe, a, e = grads_and_times(model, comp, args, restore, training)
    notes = [str(w.message)[:600] for w in ws if issubclass(w.category, AxleFallbackWarning)]
    counters = torch._dynamo.utils.counters
    breaks = sum(counters["graph_break"].values())
    notes += [f"{breaks} graph break(s): " + "; ".join(
        r.strip().splitlines()[0][:160] for r in list(counters["graph_break"])[:3])] if breaks else []
    skipped = [r for r in counters["unimplemented"] if not breaks]
    notes += [f"Dynamo left a frame to eager: {skipped[0].strip().splitlines()[0]}"] if skipped else []
    notes += ["no call ran on axle"] if STATS["axle_calls"] == calls0 else []
    notes += [f"{bad_ints} integer output(s) differ"] if bad_ints and not random else []
    ok = None if random else err < TOL and gerr < TOL and berr < TOL and not bad_ints
    first = t_fwd + t_bwd
    RESULTS[name] = dict(ok=ok, err=max(err, gerr, berr), a=a, e=e, fa=fa, fe=fe, training=training,
                         compile_s=first, notes=notes)
    what = "step" if training else "infer"
    checks = ("not compared (random)" if random else f"err {err:.1e}" + (f"  grad {gerr:.1e}" if training else "")
              + (f"  buf {berr:.1e}" if bufs else "") + ("" if ok else "  NOT OK"))
    print(f"{name:{width}s} {what} axle {a:8.2f} ms  eager {e:8.2f} ms  eager/axle {e / a:5.2f}  "
          + (f"fwd axle {fa:7.2f} eager {fe:7.2f} ({fe / fa:4.2f})  " if training else "")
          + f"{checks}  first calls {first:5.1f} s", flush=True)
    for n in notes:
        print(f"{'':{width}s} note: {n}", flush=True)


def summary():
    """The table of the programs run, the geometric mean of eager / axle, and the counts."""
    if not RESULTS:
        return
    print("\n| program | correct? | max rel diff | fallback / graph breaks | eager ms | axle ms | eager/axle "
          "| compile s |\n|---|---|---|---|---|---|---|---|")
    for n, v in RESULTS.items():
        ok = "n/a (random)" if v["ok"] is None else "yes" if v["ok"] else "NO"
        notes = "; ".join(x[:90] for x in v["notes"]) or "-"
        err = "-" if v["ok"] is None else f"{v['err']:.1e}"
        print(f"| {n} | {ok} | {err} | {notes} | {v['e']:.2f} | {v['a']:.2f} | {v['e'] / v['a']:.2f} "
              f"| {v['compile_s']:.1f} |")
    gm = lambda r: float(np.exp(np.mean(np.log(r)))) if r else float("nan")  # noqa: E731
    whole = [v["e"] / v["a"] for v in RESULTS.values() if not any("runs eagerly" in x for x in v["notes"])]
    print(f"\n{len(RESULTS)} programs; geometric mean eager/axle {gm([v['e'] / v['a'] for v in RESULTS.values()]):.2f} "
          f"(training steps and inference forwards; {gm(whole):.2f} over the {len(whole)} without a graph left to "
          f"eager); {sum(v['ok'] is True for v in RESULTS.values())} within "
          f"{TOL:g}; {sum(bool(v['notes']) for v in RESULTS.values())} with notes; "
          f"{sum(v['e'] / v['a'] < 0.8 for v in RESULTS.values())} below 0.8", flush=True)


if __name__ == "__main__":
    T.main(P, run)
    summary()
