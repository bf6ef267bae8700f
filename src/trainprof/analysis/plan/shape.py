"""The shape of a decoder-only transformer, as the planner needs it: from a preset's numbers,
a Hugging Face `config.json` (already read: a dict) or the user's flags.

Parameter count of one block (d width, f MLP hidden, k = kv heads · head size):

    attention  Q d², K and V 2·d·k, output d²       (+ biases d + 2k + d)
    MLP        plain 2·d·f, gated (SwiGLU) 3·d·f      (+ biases f (2f gated) + d)
    norms      2 per block: LayerNorm 2d, RMSNorm d

plus the token table V·d, a learned position table ctx·d (GPT-2; none with rotary
embeddings), an untied LM head V·d and the final norm. With d = 768, f = 4d, k = d, biases,
LayerNorm, learned positions and a tied head this is exactly workload/model.py's GPT
(`gpt_param_count`, test_plan.py checks it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from trainprof.errors import ConfigError, UsageError

# Hugging Face config.json keys, first match wins (GPT-2 spells them n_layer/n_embd/n_head/n_positions).
HF_KEYS = {
    "n_layer": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "d_model": ("hidden_size", "n_embd", "d_model"),
    "n_head": ("num_attention_heads", "n_head", "num_heads"),
    "vocab_size": ("vocab_size",),
    "context_len": ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length", "seq_length"),
}
# Families whose MLP is gated (SwiGLU / GeGLU: gate, up and down projections).
GATED_TYPES = ("llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3", "olmo",
               "olmo2", "internlm2", "cohere", "granite", "starcoder2_gated", "deepseek_v2", "yi")
MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer's dimensions (what memory and FLOPs depend on)."""

    PATH: ClassVar[str] = "model"

    n_layer: int
    """transformer blocks"""
    d_model: int
    """residual stream width h"""
    n_head: int
    """attention heads a"""
    vocab_size: int
    """vocabulary V"""
    context_len: int
    """longest sequence (position table size; the default sequence length)"""
    n_kv_head: int = 0
    """key/value heads (grouped-query attention); 0: as many as n_head"""
    ffn: int = 0
    """MLP hidden width; 0: 4·d_model"""
    gated: bool = False
    """gated MLP (SwiGLU: gate, up, down projections)"""
    tied: bool = True
    """the LM head shares the token table"""
    learned_positions: bool = True
    """a learned position table (GPT-2); False for rotary embeddings"""
    bias: bool = True
    """linear layers and norms have biases"""
    rmsnorm: bool = False
    """RMSNorm (one weight vector) instead of LayerNorm (weight and bias)"""
    dropout: bool = False
    """dropout after attention and MLP (Korthikanti's masks: 1 B per element each)"""
    fused_qkv: bool = False
    """one (d + 2k) × d QKV matrix (GPT-2's c_attn, our GPT) rather than three: only Adafactor's
    factored statistics (rows + cols per matrix) see the difference"""
    params: int = 0
    """parameter count when given (--params); 0: counted from the shape"""
    name: str = ""
    """where the shape came from (a preset, a config.json path, 'flags')"""

    def __post_init__(self) -> None:
        for f in ("n_layer", "d_model", "n_head", "vocab_size", "context_len"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ConfigError(f, "must be a positive integer", owner=self.PATH, got=v)
        for f in ("n_kv_head", "ffn", "params"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ConfigError(f, "must be a non-negative integer", owner=self.PATH, got=v)
        if self.d_model % self.n_head:
            raise ConfigError("d_model", f"must be a multiple of n_head ({self.n_head})", owner=self.PATH,
                              got=self.d_model)
        if self.kv_heads > self.n_head or self.n_head % self.kv_heads:
            raise ConfigError("n_kv_head", f"must divide n_head ({self.n_head})", owner=self.PATH, got=self.n_kv_head)

    # ---- derived ---------------------------------------------------------------------------
    @property
    def kv_heads(self) -> int:
        return self.n_kv_head or self.n_head

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def ffn_dim(self) -> int:
        return self.ffn or 4 * self.d_model

    def block_params(self) -> int:
        d, f, k = self.d_model, self.ffn_dim, self.kv_dim
        attn = 2 * d * d + 2 * d * k + (2 * d + 2 * k if self.bias else 0)
        mlp = (3 if self.gated else 2) * d * f + ((2 * f if self.gated else f) + d if self.bias else 0)
        return attn + mlp + 2 * self.norm_params()

    def norm_params(self) -> int:
        return self.d_model if self.rmsnorm or not self.bias else 2 * self.d_model

    def embedding_params(self) -> int:
        """Token table (+ position table) (+ untied head) + final norm."""
        d = self.d_model
        return (self.vocab_size * d * (1 if self.tied else 2) + (self.context_len * d if self.learned_positions else 0)
                + self.norm_params())

    def param_count(self) -> int:
        """Unique parameters: --params when given, else counted from the shape."""
        return self.params or self.n_layer * self.block_params() + self.embedding_params()

    def matmul_params(self) -> int:
        """Weights that take part in matmuls (the 6N of training FLOPs): every block's linear
        weights and the LM head; not the position table, norms or biases."""
        d, f, k = self.d_model, self.ffn_dim, self.kv_dim
        counted = self.n_layer * (2 * d * d + 2 * d * k + (3 if self.gated else 2) * d * f) + self.vocab_size * d
        if not self.params:
            return counted
        # --params given: scale the counted matmul share to it (embeddings are not matmuls)
        return max(0, self.params - (self.param_count_from_shape() - counted))

    def linear_bias_params(self) -> int:
        """Biases of the linear layers (autocast casts them with their weights)."""
        d, f, k = self.d_model, self.ffn_dim, self.kv_dim
        return self.n_layer * (2 * d + 2 * k + (2 * f if self.gated else f) + d) if self.bias else 0

    def param_count_from_shape(self) -> int:
        return self.n_layer * self.block_params() + self.embedding_params()


def from_hf_config(cfg: Any, *, name: str = "config.json") -> ModelShape:
    """A Hugging Face `config.json` (its dict) → ModelShape; the keys of HF_KEYS and the
    family hints (model_type, hidden_act, tie_word_embeddings, rms_norm_eps, rope_theta,
    *_bias, *dropout*). A mixture-of-experts config is refused (not modelled)."""
    if not isinstance(cfg, dict):
        raise UsageError(f"{name}: expected a JSON object (a Hugging Face config.json)")
    if isinstance(cfg.get("text_config"), dict):  # multimodal wrappers keep the language model here
        cfg = {**cfg["text_config"], "model_type": cfg["text_config"].get("model_type", cfg.get("model_type"))}
    if any(cfg.get(k) for k in MOE_KEYS):
        raise UsageError(f"{name}: a mixture-of-experts model ({', '.join(k for k in MOE_KEYS if cfg.get(k))}); "
                         "the planner models dense decoders only")
    got: dict[str, int] = {}
    for field, keys in HF_KEYS.items():
        key = next((k for k in keys if cfg.get(k) is not None), None)
        if key is None:
            raise UsageError(f"{name}: no {' / '.join(keys)} key (the {field} of the model)")
        got[field] = _int(cfg[key], key, name)
    mtype = str(cfg.get("model_type") or "").lower()
    act = str(cfg.get("hidden_act") or cfg.get("activation_function") or "").lower()
    inner = cfg.get("intermediate_size", cfg.get("n_inner"))
    drop = [cfg.get(k) for k in ("attention_dropout", "attn_pdrop", "resid_pdrop", "hidden_dropout",
                                  "hidden_dropout_prob") if isinstance(cfg.get(k), (int, float))]
    rotary = cfg.get("rope_theta") is not None or cfg.get("rotary_dim") is not None or mtype in GATED_TYPES
    return ModelShape(
        **got,
        n_kv_head=_int(cfg["num_key_value_heads"], "num_key_value_heads", name) if cfg.get("num_key_value_heads") else 0,
        ffn=_int(inner, "intermediate_size", name) if inner is not None else 0,
        gated=mtype in GATED_TYPES or act in ("silu", "swiglu", "swish"),
        fused_qkv=mtype == "gpt2",
        tied=bool(cfg.get("tie_word_embeddings", True)),  # PretrainedConfig's default is True
        learned_positions=not rotary,
        bias=bool(cfg.get("attention_bias", cfg.get("bias", mtype not in GATED_TYPES))),
        rmsnorm="rms_norm_eps" in cfg,
        dropout=any(float(p) > 0 for p in drop),
        name=name,
    )


def _int(v: Any, key: str, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise UsageError(f"{name}: {key} must be a positive integer, got {v!r}")
    return v


def with_params(shape: ModelShape, params: int | None) -> ModelShape:
    return shape if not params else replace(shape, params=params)
