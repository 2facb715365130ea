"""BERT pretraining, following OneFlow-Benchmark v0.3.0's LanguageModeling/BERT: bert.py (BertBackbone: word,
token type and position embeddings, layer norm; transformer layers of self attention with the additive input mask,
dense + residual + layer norm, gelu intermediate, dense + residual + layer norm), pretrain.py (masked LM head over
the gathered masked positions, tied to the word embedding table, weighted by masked_lm_weights; next sentence head
on the pooled first token) and run_pretraining.py / util.py (AdamW with epsilon 1e-6, weight_decay_excludes
["bias", "LayerNorm", "layer_norm"], grad clipping by global norm 1.0, PolynomialSchduler with a linear warmup).

Tiny: 2 layers, hidden 32 (2 heads of 16), intermediate 128, sequence 16, vocab 50, 4 masked positions, dropout 0
(flowlab does not draw OneFlow's masks: docs/deviations.md). The OFRecord decoder's blobs are placeholders fed
synthetic batches made here. The model code reads `oneflow.core`'s enums as bert.py does (`flowlab.core`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Dict  # noqa: UP035 (OneFlow 0.3 users annotate with typing.Dict)

import numpy as np

import flowlab as flow
import flowlab.core.operator.op_conf_pb2 as op_conf_util
import flowlab.typing as tp


@dataclass
class Config:
    batch_size: int = 2
    seq_length: int = 16
    vocab_size: int = 50
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    hidden_size: int = 32
    intermediate_size: int = 128
    max_position_embeddings: int = 32
    type_vocab_size: int = 2
    max_predictions_per_seq: int = 4
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    learning_rate: float = 1e-3
    weight_decay_rate: float = 0.01
    iter_num: int = 10
    warmup_proportion: float = 0.1


class BertBackbone:
    def __init__(self, input_ids_blob, input_mask_blob, token_type_ids_blob, cfg: Config) -> None:
        with flow.scope.namespace("bert"):
            with flow.scope.namespace("embeddings"):
                self.embedding_output_, self.embedding_table_ = _EmbeddingLookup(
                    input_ids_blob, cfg.vocab_size, cfg.hidden_size, 0.02, "word_embeddings")
                self.embedding_output_ = _EmbeddingPostprocessor(
                    self.embedding_output_, cfg.seq_length, cfg.hidden_size, token_type_ids_blob,
                    cfg.type_vocab_size, cfg.max_position_embeddings, cfg.hidden_dropout_prob)
            with flow.scope.namespace("encoder"):
                attention_mask_blob = _CreateAttentionMaskFromInputMask(input_mask_blob, cfg.seq_length,
                                                                        cfg.seq_length)
                self.all_encoder_layers_ = _TransformerModel(self.embedding_output_, attention_mask_blob, cfg)
            self.sequence_output_ = self.all_encoder_layers_[-1]

    def sequence_output(self):
        return self.sequence_output_

    def embedding_table(self):
        return self.embedding_table_


def CreateInitializer(std):
    return flow.truncated_normal(std)


def _TransformerModel(input_blob, attention_mask_blob, cfg: Config):
    hidden_size, heads = cfg.hidden_size, cfg.num_attention_heads
    assert hidden_size % heads == 0
    attention_head_size = hidden_size // heads
    prev_output_blob = flow.reshape(input_blob, (-1, hidden_size))
    for layer_idx in range(cfg.num_hidden_layers):
        with flow.scope.namespace(f"layer_{layer_idx}"):
            layer_input_blob = prev_output_blob
            with flow.scope.namespace("attention"):
                with flow.scope.namespace("self"):
                    attention_output_blob = _AttentionLayer(layer_input_blob, layer_input_blob, attention_mask_blob,
                                                            heads, attention_head_size,
                                                            cfg.attention_probs_dropout_prob, 0.02,
                                                            cfg.seq_length, cfg.seq_length)
                with flow.scope.namespace("output"):
                    attention_output_blob = _FullyConnected(attention_output_blob, hidden_size, hidden_size,
                                                            weight_initializer=CreateInitializer(0.02), name="dense")
                    attention_output_blob = _Dropout(attention_output_blob, cfg.hidden_dropout_prob)
                    attention_output_blob = attention_output_blob + layer_input_blob
                    attention_output_blob = _LayerNorm(attention_output_blob, hidden_size)
            with flow.scope.namespace("intermediate"):
                intermediate_output_blob = _FullyConnected(attention_output_blob, hidden_size,
                                                           cfg.intermediate_size, activation=op_conf_util.kNone,
                                                           weight_initializer=CreateInitializer(0.02), name="dense")
                intermediate_output_blob = flow.math.gelu(intermediate_output_blob)
            with flow.scope.namespace("output"):
                layer_output_blob = _FullyConnected(intermediate_output_blob, cfg.intermediate_size, hidden_size,
                                                    weight_initializer=CreateInitializer(0.02), name="dense")
                layer_output_blob = _Dropout(layer_output_blob, cfg.hidden_dropout_prob)
                layer_output_blob = layer_output_blob + attention_output_blob
                prev_output_blob = _LayerNorm(layer_output_blob, hidden_size)
    return [flow.reshape(prev_output_blob, (-1, cfg.seq_length, hidden_size))]


def _AttentionLayer(from_blob, to_blob, attention_mask_blob, num_attention_heads, size_per_head,
                    attention_probs_dropout_prob, initializer_range, from_seq_length, to_seq_length):
    def TransposeForScores(input_blob, seq_length):
        output_blob = flow.reshape(input_blob, [-1, seq_length, num_attention_heads, size_per_head])
        return flow.transpose(output_blob, perm=[0, 2, 1, 3])

    width = num_attention_heads * size_per_head
    from_blob_2d = flow.reshape(from_blob, [-1, width])
    to_blob_2d = flow.reshape(to_blob, [-1, width])
    query_blob = _FullyConnected(from_blob_2d, width, width, op_conf_util.kNone, "query",
                                 CreateInitializer(initializer_range))
    key_blob = _FullyConnected(to_blob_2d, width, width, op_conf_util.kNone, "key",
                               CreateInitializer(initializer_range))
    value_blob = _FullyConnected(to_blob_2d, width, width, op_conf_util.kNone, "value",
                                 CreateInitializer(initializer_range))
    query_blob = TransposeForScores(query_blob, from_seq_length)
    key_blob = TransposeForScores(key_blob, to_seq_length)
    attention_scores_blob = flow.matmul(query_blob, key_blob, transpose_b=True)
    attention_scores_blob = attention_scores_blob * (1.0 / math.sqrt(float(size_per_head)))
    attention_mask_blob = flow.reshape(attention_mask_blob, [-1, 1, from_seq_length, to_seq_length])
    attention_mask_blob = flow.cast(attention_mask_blob, dtype=flow.float)
    addr_blob = (attention_mask_blob - 1.0) * 10000.0
    attention_scores_blob = attention_scores_blob + addr_blob
    attention_probs_blob = flow.nn.softmax(attention_scores_blob)
    attention_probs_blob = _Dropout(attention_probs_blob, attention_probs_dropout_prob)
    value_blob = flow.reshape(value_blob, [-1, to_seq_length, num_attention_heads, size_per_head])
    value_blob = flow.transpose(value_blob, perm=[0, 2, 1, 3])
    context_blob = flow.matmul(attention_probs_blob, value_blob)
    context_blob = flow.transpose(context_blob, perm=[0, 2, 1, 3])
    return flow.reshape(context_blob, [-1, width])


def _FullyConnected(input_blob, input_size, units, activation=None, name=None, weight_initializer=None):
    weight_blob = flow.get_variable(name=name + "-weight", shape=[input_size, units], dtype=input_blob.dtype,
                                    initializer=weight_initializer)
    bias_blob = flow.get_variable(name=name + "-bias", shape=[units], dtype=input_blob.dtype,
                                  initializer=flow.constant_initializer(0.0))
    output_blob = flow.matmul(input_blob, weight_blob)
    return flow.nn.bias_add(output_blob, bias_blob)


def _Dropout(input_blob, dropout_prob):
    if dropout_prob == 0.0:
        return input_blob
    return flow.nn.dropout(input_blob, rate=dropout_prob)


def _LayerNorm(input_blob, hidden_size):
    return flow.layers.layer_norm(input_blob, name="LayerNorm", begin_norm_axis=-1, begin_params_axis=-1)


def _CreateAttentionMaskFromInputMask(to_mask_blob, from_seq_length, to_seq_length):
    output = flow.cast(to_mask_blob, dtype=flow.float)
    output = flow.reshape(output, [-1, 1, to_seq_length])
    zeros = flow.constant(0.0, dtype=flow.float, shape=[from_seq_length, to_seq_length])
    return zeros + output


def _EmbeddingPostprocessor(input_blob, seq_length, embedding_size, token_type_ids_blob, token_type_vocab_size,
                            max_position_embeddings, dropout_prob):
    token_type_table = flow.get_variable(name="token_type_embeddings",
                                         shape=[token_type_vocab_size, embedding_size], dtype=input_blob.dtype,
                                         initializer=CreateInitializer(0.02))
    output = input_blob + flow.gather(params=token_type_table, indices=token_type_ids_blob, axis=0)
    position_table = flow.get_variable(name="position_embeddings",
                                       shape=[1, max_position_embeddings, embedding_size], dtype=input_blob.dtype,
                                       initializer=CreateInitializer(0.02))
    assert seq_length <= max_position_embeddings
    if seq_length != max_position_embeddings:
        position_table = flow.slice(position_table, begin=[None, 0, 0], size=[None, seq_length, -1])
    output = output + position_table
    output = _LayerNorm(output, embedding_size)
    return _Dropout(output, dropout_prob)


def _EmbeddingLookup(input_ids_blob, vocab_size, embedding_size, initializer_range, word_embedding_name):
    embedding_table = flow.get_variable(name=word_embedding_name, shape=[vocab_size, embedding_size],
                                        dtype=flow.float, initializer=CreateInitializer(initializer_range))
    return flow.gather(params=embedding_table, indices=input_ids_blob, axis=0), embedding_table


def PreTrain(input_ids, input_mask, token_type_ids, masked_lm_positions, masked_lm_ids, masked_lm_weights,
             next_sentence_label, cfg: Config):
    backbone = BertBackbone(input_ids, input_mask, token_type_ids, cfg)
    lm_loss = _AddMaskedLanguageModelLoss(backbone.sequence_output(), backbone.embedding_table(),
                                          masked_lm_positions, masked_lm_ids, masked_lm_weights, cfg)
    pooled_output = PooledOutput(backbone.sequence_output(), cfg.hidden_size)
    ns_loss = _AddNextSentenceOutput(pooled_output, next_sentence_label, cfg.hidden_size)
    with flow.scope.namespace("cls-loss"):
        lm_loss = flow.math.reduce_mean(lm_loss)
        ns_loss = flow.math.reduce_mean(ns_loss)
        total_loss = lm_loss + ns_loss
    return total_loss, lm_loss, ns_loss


def PooledOutput(sequence_output, hidden_size):
    with flow.scope.namespace("bert-pooler"):
        first_token_tensor = flow.slice(sequence_output, [None, 0, 0], [None, 1, -1])
        first_token_tensor = flow.reshape(first_token_tensor, [-1, hidden_size])
        pooled_output = _FullyConnected(first_token_tensor, hidden_size, hidden_size,
                                        weight_initializer=CreateInitializer(0.02), name="dense")
        return flow.math.tanh(pooled_output)


def _AddMaskedLanguageModelLoss(input_blob, output_weights_blob, positions_blob, label_id_blob, label_weight_blob,
                                cfg: Config):
    with flow.scope.namespace("other"):
        sum_label_weight_blob = flow.math.reduce_sum(label_weight_blob, axis=[-1])
        ones = sum_label_weight_blob * 0.0 + 1.0
        sum_label_weight_blob = flow.math.reduce_sum(sum_label_weight_blob)
        batch_size = flow.math.reduce_sum(ones)
        sum_label_weight_blob = sum_label_weight_blob / batch_size
    with flow.scope.namespace("cls-predictions"):
        input_blob = flow.gather(params=input_blob, indices=positions_blob, axis=2, batch_dims=2)
        input_blob = flow.reshape(input_blob, [-1, cfg.hidden_size])
        with flow.scope.namespace("transform"):
            input_blob = _FullyConnected(input_blob, cfg.hidden_size, cfg.hidden_size,
                                         activation=op_conf_util.kNone, weight_initializer=CreateInitializer(0.02),
                                         name="dense")
            input_blob = flow.math.gelu(input_blob)
            input_blob = _LayerNorm(input_blob, cfg.hidden_size)
        output_bias = flow.get_variable(name="output_bias", shape=[cfg.vocab_size], dtype=input_blob.dtype,
                                        initializer=flow.constant_initializer(1.0))
        logit_blob = flow.matmul(input_blob, output_weights_blob, transpose_b=True)
        logit_blob = flow.nn.bias_add(logit_blob, output_bias)
        label_id_blob = flow.reshape(label_id_blob, [-1])
        pre_example_loss = flow.nn.sparse_softmax_cross_entropy_with_logits(logits=logit_blob, labels=label_id_blob)
        pre_example_loss = flow.reshape(pre_example_loss, [-1, cfg.max_predictions_per_seq])
        numerator = pre_example_loss * label_weight_blob
        with flow.scope.namespace("loss"):
            numerator = flow.math.reduce_sum(numerator, axis=[-1])
            denominator = sum_label_weight_blob + 1e-5
            return numerator / denominator


def _AddNextSentenceOutput(input_blob, label_blob, hidden_size):
    with flow.scope.namespace("cls-seq_relationship"):
        output_weight_blob = flow.get_variable(name="output_weights", shape=[2, hidden_size],
                                               dtype=input_blob.dtype, initializer=CreateInitializer(0.02))
        output_bias_blob = flow.get_variable(name="output_bias", shape=[2], dtype=input_blob.dtype,
                                             initializer=flow.constant_initializer(0.0))
        logit_blob = flow.matmul(input_blob, output_weight_blob, transpose_b=True)
        logit_blob = flow.nn.bias_add(logit_blob, output_bias_blob)
        return flow.nn.sparse_softmax_cross_entropy_with_logits(logits=logit_blob, labels=label_blob)


def CreateOptimizer(cfg: Config):
    """util.py's CreateOptimizer (no fp16 loss scaling)."""
    warmup_batches = int(cfg.iter_num * cfg.warmup_proportion)
    lr_warmup = flow.optimizer.warmup.linear(warmup_batches, 0)
    lr_scheduler = flow.optimizer.PolynomialSchduler(cfg.learning_rate, cfg.iter_num, 0.0, warmup=lr_warmup)
    return flow.optimizer.AdamW(lr_scheduler, epsilon=1e-6, weight_decay=cfg.weight_decay_rate,
                                weight_decay_excludes=["bias", "LayerNorm", "layer_norm"],
                                grad_clipping=flow.optimizer.grad_clipping.by_global_norm(1.0))


def GetFunctionConfig():
    config = flow.function_config()
    config.enable_auto_mixed_precision(False)
    config.enable_fuse_add_to_output(True)
    config.enable_fuse_model_update_ops(True)
    return config


def build(cfg: Config | None = None):
    cfg = cfg or Config()
    flow.clear_default_session()
    b, s, p = cfg.batch_size, cfg.seq_length, cfg.max_predictions_per_seq

    @flow.global_function(type="train", function_config=GetFunctionConfig())
    def PretrainJob(input_ids: tp.Numpy.Placeholder((b, s), dtype=flow.int32),
                    next_sentence_labels: tp.Numpy.Placeholder((b, 1), dtype=flow.int32),
                    input_mask: tp.Numpy.Placeholder((b, s), dtype=flow.int32),
                    segment_ids: tp.Numpy.Placeholder((b, s), dtype=flow.int32),
                    masked_lm_ids: tp.Numpy.Placeholder((b, p), dtype=flow.int32),
                    masked_lm_positions: tp.Numpy.Placeholder((b, p), dtype=flow.int32),
                    masked_lm_weights: tp.Numpy.Placeholder((b, p), dtype=flow.float)) -> Dict[str, tp.Numpy]:  # noqa: UP006
        total_loss, mlm_loss, nsp_loss = PreTrain(input_ids, input_mask, segment_ids, masked_lm_positions,
                                                  masked_lm_ids, masked_lm_weights, next_sentence_labels, cfg)
        CreateOptimizer(cfg).minimize(total_loss)
        return {"total_loss": total_loss, "mlm_loss": mlm_loss, "nsp_loss": nsp_loss}

    return PretrainJob


def synthetic_batch(cfg: Config, seed: int = 0) -> dict[str, np.ndarray]:
    """What the OFRecord decoder gives, made up: the second sequence's tail is padding (mask 0), the last masked
    position's weight is 0 (a padded prediction slot)."""
    rng = np.random.default_rng(seed)
    b, s, p = cfg.batch_size, cfg.seq_length, cfg.max_predictions_per_seq
    mask = np.ones((b, s), np.int32)
    mask[1, s - 4:] = 0
    segment = np.zeros((b, s), np.int32)
    segment[:, s // 2:] = 1
    weights = np.ones((b, p), np.float32)
    weights[:, -1] = 0.0
    return {"input_ids": rng.integers(0, cfg.vocab_size, (b, s)).astype(np.int32),
            "next_sentence_labels": rng.integers(0, 2, (b, 1)).astype(np.int32),
            "input_mask": mask, "segment_ids": segment,
            "masked_lm_ids": rng.integers(0, cfg.vocab_size, (b, p)).astype(np.int32),
            "masked_lm_positions": np.stack([rng.choice(s - 4, p, replace=False) for _ in range(b)]).astype(np.int32),
            "masked_lm_weights": weights}


def main(steps: int = 5) -> None:
    cfg = Config()
    train = build(cfg)
    for step in range(steps):
        start = time.perf_counter()
        out = train(**synthetic_batch(cfg, step))
        print(f"step {step} total_loss {float(out['total_loss'].mean()):.6f} mlm_loss "
              f"{float(out['mlm_loss'].mean()):.6f} nsp_loss {float(out['nsp_loss'].mean()):.6f} "
              f"({time.perf_counter() - start:.2f} s)")


if __name__ == "__main__":
    main()
