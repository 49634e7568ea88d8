#!/usr/bin/env python3
"""Writes the encoder fixtures that test_encoders.c checks (issue 10): tiny BERT models saved by
transformers' save_pretrained, one per output head, with what transformers computes for a batch
of rows of different lengths.

Run from the repository root (transformers 5, torch 2, sentence-transformers 6):

    python3 test/make_encoder_fixtures.py

Each dir test/fixtures/<name>/ holds config.json, model.safetensors and
    reference.txt       rows=<n>, then per row ids<i>=<comma ids> and types<i>=<comma type ids>
                        (LayoutLM's: and boxes<i>=<x0,y0,x1,y1 of each token>)
    hidden.bin          float32 LE [sum of lengths][hidden]: last_hidden_state of the real tokens
    pooled.bin          float32 LE [rows][hidden]: the pooler's output (dirs whose model has one)
    logits.bin          float32 LE: the head's logits, per real token [sum of lengths][n] or per
                        row [rows][n] (sequence classification)
    embed_<mode>.bin    (bert only) float32 LE [rows][hidden]: sentence-transformers' Pooling of
                        the last hidden state in that mode (cls, max, mean, mean_sqrt_len_tokens,
                        weightedmean, lasttoken), not normalised, token types all 0
transformers pads the rows on the right and masks the pads (attention_mask); the library pads on
the left; both give every row what it gives alone.
"""
import json
import shutil
import sys
from pathlib import Path

import torch
import transformers

ROOT = Path(__file__).resolve().parent
FIXTURES = ROOT / "fixtures"

# Heads 6 so that 1, 2 and 3 ranks split them evenly; weights larger than transformers' default
# init so that a wrong trait moves the outputs well beyond the tests' 1e-4.
BERT_SHAPE = dict(vocab_size=120, hidden_size=48, num_hidden_layers=2, num_attention_heads=6, intermediate_size=96,
                  max_position_embeddings=32, type_vocab_size=2, initializer_range=0.2, hidden_act="gelu",
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
ROWS = [  # (ids, token types): lengths 7, 12, 4; the second row is a pair of segments
    ([2, 17, 45, 88, 9, 63, 3], [0] * 7),
    ([2, 5, 77, 31, 101, 3, 54, 12, 96, 40, 8, 3], [0] * 6 + [1] * 6),
    ([2, 119, 64, 3], [0] * 4),
]
ROBERTA_SHAPE = dict(BERT_SHAPE, max_position_embeddings=34, pad_token_id=1)  # positions start after the pad id
ELECTRA_SHAPE = dict(BERT_SHAPE, embedding_size=32)  # narrower embeddings, projected in
ALBERT_SHAPE = dict(BERT_SHAPE, embedding_size=32, num_hidden_layers=3, hidden_act="gelu_new")  # 3 layers, one weight set
ROFORMER_SHAPE = dict(BERT_SHAPE, hidden_act="gelu_new")  # rotary instead of a position table
MPNET_SHAPE = dict((k, v) for k, v in ROBERTA_SHAPE.items() if k != "type_vocab_size")  # relative bias, no segments
T5_SHAPE = dict(vocab_size=120, d_model=48, d_kv=8, d_ff=96, num_layers=2, num_heads=6, feed_forward_proj="relu",
                initializer_factor=1.0, dropout_rate=0.0)
DISTILBERT_SHAPE = dict(vocab_size=120, dim=48, n_layers=2, n_heads=6, hidden_dim=96, max_position_embeddings=32,
                        initializer_range=0.2, activation="gelu", dropout=0.0, attention_dropout=0.0)
# DeBERTa-v3's traits (deberta-v3-base's config at this size): disentangled attention c2p|p2c
# over relative embeddings LayerNormed and projected by each layer's own query and key weights
# (share_att_key), log buckets (position_buckets 8: distances of 4 and more share buckets on the
# 12-token row), no absolute positions, no segments; 4 heads so that 3 ranks split them unevenly.
DEBERTA_V3_SHAPE = dict(vocab_size=120, hidden_size=48, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=96, max_position_embeddings=32, type_vocab_size=0, initializer_range=0.2,
                        hidden_act="gelu", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                        relative_attention=True, position_buckets=8, max_relative_positions=-1,
                        pos_att_type="p2c|c2p", share_att_key=True, norm_rel_ebd="layer_norm",
                        position_biased_input=False, layer_norm_eps=1e-7, pad_token_id=0)
# DeBERTa (v1, deberta-base's config at this size): a fused in_proj with q_bias and v_bias,
# c2p|p2c through pos_proj / pos_q_proj, absolute positions added, no log buckets (relative
# distances clamped at max_position_embeddings), segments.
DEBERTA_V1_SHAPE = dict(vocab_size=120, hidden_size=48, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=96, max_position_embeddings=32, type_vocab_size=2, initializer_range=0.2,
                        hidden_act="gelu", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                        relative_attention=True, max_relative_positions=-1, pos_att_type="c2p|p2c",
                        position_biased_input=True, layer_norm_eps=1e-7, pad_token_id=0)
# Decoders run as encoders (pf_encode, pf_embed): 6 query heads over 2 key/value heads (3 ranks
# replicate them), pad id 0, which the last row ends with: a sequence-classification head scores
# the token before it, as transformers picks the last token that is not padding.
LLAMA_SHAPE = dict(vocab_size=120, hidden_size=48, num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2,
                   intermediate_size=96, max_position_embeddings=32, initializer_range=0.2, pad_token_id=0)
QWEN3_SHAPE = dict(LLAMA_SHAPE, head_dim=16, tie_word_embeddings=False)
GPT2_SHAPE = dict(vocab_size=120, n_embd=48, n_layer=2, n_head=6, n_positions=32, initializer_range=0.2,
                  resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, pad_token_id=0, bos_token_id=2,
                  eos_token_id=3)
DECODER_ROWS = [(ids, [0] * len(ids)) for ids in (ROWS[0][0], ROWS[1][0], ROWS[2][0] + [0])]
# BART's task heads (bart-large-mnli): the decoder over the source shifted right, the classifier on
# its state at each row's last eos (id 2; every row holds two, a pair "a </s> b </s>", as
# transformers requires an equal count); 6 heads, init_std large enough that a wrong trait shows.
BART_SHAPE = dict(vocab_size=120, d_model=48, encoder_layers=2, decoder_layers=2, encoder_attention_heads=6,
                  decoder_attention_heads=6, encoder_ffn_dim=96, decoder_ffn_dim=96, max_position_embeddings=32,
                  init_std=0.2, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, pad_token_id=1,
                  bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=None)
# T5's task heads as BART's: eos 2 (the rows' eos), decoder start 0
T5_TASK_SHAPE = dict(T5_SHAPE, eos_token_id=2, pad_token_id=0, decoder_start_token_id=0)
# LED: BART's shape with Longformer's attention in the encoder: 4 heads (3 ranks split them
# unevenly), windows 4 and 8 (one-sided 2 and 4) below the 8- and 12-token rows; no global tokens
# (LED's classes take none by default)
LED_SHAPE = dict(vocab_size=120, d_model=48, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                 decoder_attention_heads=4, encoder_ffn_dim=96, decoder_ffn_dim=96, max_encoder_position_embeddings=32,
                 max_decoder_position_embeddings=32, attention_window=[4, 8], init_std=0.2, dropout=0.0,
                 attention_dropout=0.0, activation_dropout=0.0, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                 decoder_start_token_id=2)
SEQ2SEQ_ROWS = [
    ([0, 17, 45, 2, 88, 9, 63, 2], [0] * 8),
    ([0, 5, 77, 31, 101, 2, 54, 12, 96, 40, 8, 2], [0] * 12),
    ([0, 119, 2, 64, 2], [0] * 5),
]
# SqueezeBERT: BERT's shape with grouped 1-D convolutions, each layer its own group count (so that
# a slot read with another's groups fails), 4 heads so that 3 ranks split them unevenly and cut
# through the groups of q, k, v and the MLP.
SQUEEZEBERT_SHAPE = dict(BERT_SHAPE, num_attention_heads=4, embedding_size=48, q_groups=4, k_groups=2, v_groups=3,
                         post_attention_groups=2, intermediate_groups=4, output_groups=6)
# MobileBERT (google/mobilebert-uncased's traits: trigram input, shared q/k bottleneck, 4 stacked
# MLPs, NoNorm, relu) at hidden 48, embeddings of 16 (the LM head's extra rows 32), blocks of 24
# in 4 heads (3 ranks split them unevenly); its NoNorm gains and biases are drawn at random
# (transformers makes them 1 and 0) so that a missing one moves the outputs; weights of 0.1 keep
# the un-normalised stream near 1 (0.2 grows it past 100, where fp32's own noise nears 1e-4).
MOBILEBERT_SHAPE = dict(vocab_size=120, hidden_size=48, embedding_size=16, intra_bottleneck_size=24,
                        num_hidden_layers=2, num_attention_heads=4, intermediate_size=40, max_position_embeddings=32,
                        type_vocab_size=2, initializer_range=0.1, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, num_feedforward_networks=4)
# LayoutLM: BERT's shape in 4 heads (3 ranks split them unevenly), 2-D tables of 64 rows; each
# token a box (x0, y0, x1, y1): [CLS] 0,0,0,0 and the last [SEP] 63,63,63,63 as transformers'
# examples give them (0 and the scale's top), the words between at varied places and sizes (the
# widest and tallest reach row 63 of the width and height tables).
LAYOUTLM_SHAPE = dict(BERT_SHAPE, num_attention_heads=4, max_2d_position_embeddings=64)
# ConvBERT: num_attention_heads / head_ratio = 4 attention heads of hidden / 4 / 2 = 6 values and as
# many span-based dynamic convolution heads (3 ranks split them unevenly), kernels of 5 (the 4-token
# row's windows reach past both ends), embeddings of 32 projected in; its attention's biases drawn
# at random (transformers makes the convolution's 0) so that a missing one moves the outputs.
CONVBERT_SHAPE = dict(BERT_SHAPE, num_attention_heads=8, head_ratio=2, conv_kernel_size=5, embedding_size=32)

# XLM and FlauBERT: 4 heads (3 ranks split them unevenly), MLP 4 x 48 (fixed), pad id 2 (row 0's
# first id: the attention mask, not the ids, marks the pads), weights of 0.2; the fixtures with
# language embeddings (n_langs 3) are given each token's language as langs (the reference's types,
# pf_encode's token_type_ids), the others none (no types in the reference).
XLM_SHAPE = dict(vocab_size=120, emb_dim=48, n_layers=2, n_heads=4, max_position_embeddings=32, dropout=0.0,
                 attention_dropout=0.0, embed_init_std=0.2, init_std=0.2, layer_norm_eps=1e-12)
XLM_LANGS = dict(XLM_SHAPE, n_langs=3)
LANGUAGE_ROWS = [(ids, langs) for (ids, _), langs in zip(ROWS, ([1] * 7, [0] * 6 + [2] * 6, [2] * 4))]


def languages(config) -> bool:
    """XLM's lang_embeddings exist (and the rows' languages are given)."""
    return config.model_type in ("xlm", "flaubert") and config.n_langs > 1 and config.use_lang_emb


# Longformer: RoBERTa's shape in 4 heads (3 ranks split them unevenly), one segment, attention
# windows 4 and 8 (one-sided 2 and 4: below the rows' 6 to 14 tokens, so that locality
# matters); rows "<s> question </s></s> context </s>" with the 3 separators (id 2) its question
# answering and multiple-choice heads find their default global tokens by. The bare model, its
# masked LM and token classifier are given global tokens (row 2 none, so that a batch mixes rows
# with and without); the other heads take their defaults (no mask given), as pf_encode does.
LONGFORMER_SHAPE = dict(ROBERTA_SHAPE, num_attention_heads=4, type_vocab_size=1, attention_window=[4, 8],
                        bos_token_id=0, eos_token_id=2, sep_token_id=2)
LONGFORMER_ROWS = [
    ([0, 17, 45, 2, 2, 88, 9, 63, 2], [0] * 9),
    ([0, 5, 77, 31, 101, 2, 2, 54, 12, 96, 40, 8, 33, 2], [0] * 14),
    ([0, 119, 2, 2, 64, 2], [0] * 6),
]
LONGFORMER_GLOBAL = [[int(t in (0, 6)) for t in range(9)], [int(t in (0, 1, 10)) for t in range(14)], [0] * 6]


def layout_boxes(row, length):
    boxes = [[0, 0, 0, 0]]
    for t in range(1, length - 1):
        x0, y0 = (13 * t + 7 * row) % 40, (5 * t + 17 * row) % 50
        boxes.append([x0, y0, min(63, x0 + (9 * t + row) % 30), min(63, y0 + 1 + (3 * t) % 14)])
    if row == 1:
        boxes[3] = [0, 0, 63, 63]
    return boxes + [[63, 63, 63, 63]]


FIXTURE_HEADS = [  # dir, config class, its shape, model class, label count
    ("bert", "BertConfig", BERT_SHAPE, "BertModel", None),
    ("bert-mlm", "BertConfig", BERT_SHAPE, "BertForMaskedLM", None),
    ("bert-cls", "BertConfig", BERT_SHAPE, "BertForSequenceClassification", 3),
    ("bert-tok", "BertConfig", BERT_SHAPE, "BertForTokenClassification", 5),
    ("bert-qa", "BertConfig", BERT_SHAPE, "BertForQuestionAnswering", None),
    ("megatron-bert", "MegatronBertConfig", BERT_SHAPE, "MegatronBertModel", None),
    ("megatron-bert-mlm", "MegatronBertConfig", BERT_SHAPE, "MegatronBertForMaskedLM", None),
    ("roberta", "RobertaConfig", ROBERTA_SHAPE, "RobertaModel", None),
    ("roberta-mlm", "RobertaConfig", ROBERTA_SHAPE, "RobertaForMaskedLM", None),
    ("roberta-cls", "RobertaConfig", ROBERTA_SHAPE, "RobertaForSequenceClassification", 3),
    ("xlm-roberta-tok", "XLMRobertaConfig", ROBERTA_SHAPE, "XLMRobertaForTokenClassification", 4),
    ("electra", "ElectraConfig", ELECTRA_SHAPE, "ElectraModel", None),
    ("electra-mlm", "ElectraConfig", ELECTRA_SHAPE, "ElectraForMaskedLM", None),
    ("electra-cls", "ElectraConfig", ELECTRA_SHAPE, "ElectraForSequenceClassification", 3),
    ("albert", "AlbertConfig", ALBERT_SHAPE, "AlbertModel", None),
    ("albert-mlm", "AlbertConfig", ALBERT_SHAPE, "AlbertForMaskedLM", None),
    ("albert-cls", "AlbertConfig", ALBERT_SHAPE, "AlbertForSequenceClassification", 3),
    ("roformer", "RoFormerConfig", ROFORMER_SHAPE, "RoFormerModel", None),
    ("roformer-mlm", "RoFormerConfig", ROFORMER_SHAPE, "RoFormerForMaskedLM", None),
    ("roformer-cls", "RoFormerConfig", ROFORMER_SHAPE, "RoFormerForSequenceClassification", 3),
    ("mpnet", "MPNetConfig", MPNET_SHAPE, "MPNetModel", None),
    ("mpnet-mlm", "MPNetConfig", MPNET_SHAPE, "MPNetForMaskedLM", None),
    ("mpnet-cls", "MPNetConfig", MPNET_SHAPE, "MPNetForSequenceClassification", 3),
    ("t5-encoder", "T5Config", T5_SHAPE, "T5EncoderModel", None),
    ("t5-encoder-gated", "T5Config", dict(T5_SHAPE, feed_forward_proj="gated-gelu"), "T5EncoderModel", None),
    ("distilbert-mlm", "DistilBertConfig", DISTILBERT_SHAPE, "DistilBertForMaskedLM", None),
    ("distilbert-cls", "DistilBertConfig", DISTILBERT_SHAPE, "DistilBertForSequenceClassification", 3),
    ("distilbert-qa", "DistilBertConfig", DISTILBERT_SHAPE, "DistilBertForQuestionAnswering", None),
    ("deberta-v3", "DebertaV2Config", DEBERTA_V3_SHAPE, "DebertaV2Model", None),
    ("deberta-v3-mlm", "DebertaV2Config", DEBERTA_V3_SHAPE, "DebertaV2ForMaskedLM", None),
    ("deberta-v3-cls", "DebertaV2Config", DEBERTA_V3_SHAPE, "DebertaV2ForSequenceClassification", 3),
    ("deberta-v3-tok", "DebertaV2Config", DEBERTA_V3_SHAPE, "DebertaV2ForTokenClassification", 5),
    ("deberta-v3-qa", "DebertaV2Config", DEBERTA_V3_SHAPE, "DebertaV2ForQuestionAnswering", None),
    ("llama-cls", "LlamaConfig", LLAMA_SHAPE, "LlamaForSequenceClassification", 3),
    ("gpt2-cls", "GPT2Config", GPT2_SHAPE, "GPT2ForSequenceClassification", 2),
    ("qwen3-bare", "Qwen3Config", QWEN3_SHAPE, "Qwen3Model", None),
    ("bart-cls", "BartConfig", BART_SHAPE, "BartForSequenceClassification", 3),
    ("bart-qa", "BartConfig", BART_SHAPE, "BartForQuestionAnswering", None),
    ("electra-rtd", "ElectraConfig", ELECTRA_SHAPE, "ElectraForPreTraining", None),
    ("bert-mc", "BertConfig", BERT_SHAPE, "BertForMultipleChoice", None),
    ("roberta-mc", "RobertaConfig", ROBERTA_SHAPE, "RobertaForMultipleChoice", None),
    ("distilbert-mc", "DistilBertConfig", DISTILBERT_SHAPE, "DistilBertForMultipleChoice", None),
    ("deberta-v3-mc", "DebertaV2Config", DEBERTA_V3_SHAPE, "DebertaV2ForMultipleChoice", None),
    ("albert-mc", "AlbertConfig", ALBERT_SHAPE, "AlbertForMultipleChoice", None),
    ("mpnet-mc", "MPNetConfig", MPNET_SHAPE, "MPNetForMultipleChoice", None),
    ("t5-cls", "T5Config", T5_TASK_SHAPE, "T5ForSequenceClassification", 3),
    ("t5-qa", "T5Config", T5_TASK_SHAPE, "T5ForQuestionAnswering", None),
    ("dpr-question", "DPRConfig", BERT_SHAPE, "DPRQuestionEncoder", None),
    ("dpr-context", "DPRConfig", BERT_SHAPE, "DPRContextEncoder", None),
    ("bert-nsp", "BertConfig", BERT_SHAPE, "BertForNextSentencePrediction", None),
    ("bert-pretraining", "BertConfig", BERT_SHAPE, "BertForPreTraining", None),  # its masked LM; NSP unused
    ("ibert", "IBertConfig", dict(ROBERTA_SHAPE, quant_mode=False), "IBertModel", None),
    ("ibert-cls", "IBertConfig", dict(ROBERTA_SHAPE, quant_mode=False), "IBertForSequenceClassification", 3),
    ("xlm-roberta-xl", "XLMRobertaXLConfig", ROBERTA_SHAPE, "XLMRobertaXLModel", None),
    ("xlm-roberta-xl-mlm", "XLMRobertaXLConfig", ROBERTA_SHAPE, "XLMRobertaXLForMaskedLM", None),
    ("xlm-roberta-xl-cls", "XLMRobertaXLConfig", ROBERTA_SHAPE, "XLMRobertaXLForSequenceClassification", 3),
    ("ernie", "ErnieConfig", dict(BERT_SHAPE, use_task_id=True), "ErnieModel", None),
    ("ernie-cls", "ErnieConfig", dict(BERT_SHAPE, use_task_id=True), "ErnieForSequenceClassification", 3),
    ("llama-tok", "LlamaConfig", LLAMA_SHAPE, "LlamaForTokenClassification", 5),
    ("llama-qa", "LlamaConfig", LLAMA_SHAPE, "LlamaForQuestionAnswering", None),
    ("gpt2-tok", "GPT2Config", GPT2_SHAPE, "GPT2ForTokenClassification", 5),
    ("gpt2-qa", "GPT2Config", GPT2_SHAPE, "GPT2ForQuestionAnswering", None),
    ("deberta", "DebertaConfig", DEBERTA_V1_SHAPE, "DebertaModel", None),
    ("deberta-cls", "DebertaConfig", DEBERTA_V1_SHAPE, "DebertaForSequenceClassification", 3),
    ("deberta-v2-pos-proj", "DebertaV2Config", dict(DEBERTA_V3_SHAPE, share_att_key=False), "DebertaV2Model", None),
    ("layoutlm", "LayoutLMConfig", LAYOUTLM_SHAPE, "LayoutLMModel", None),
    ("layoutlm-mlm", "LayoutLMConfig", LAYOUTLM_SHAPE, "LayoutLMForMaskedLM", None),
    ("layoutlm-cls", "LayoutLMConfig", LAYOUTLM_SHAPE, "LayoutLMForSequenceClassification", 3),
    ("layoutlm-tok", "LayoutLMConfig", LAYOUTLM_SHAPE, "LayoutLMForTokenClassification", 5),
    ("layoutlm-qa", "LayoutLMConfig", LAYOUTLM_SHAPE, "LayoutLMForQuestionAnswering", None),
    ("squeezebert", "SqueezeBertConfig", SQUEEZEBERT_SHAPE, "SqueezeBertModel", None),
    ("squeezebert-mlm", "SqueezeBertConfig", SQUEEZEBERT_SHAPE, "SqueezeBertForMaskedLM", None),
    ("squeezebert-cls", "SqueezeBertConfig", SQUEEZEBERT_SHAPE, "SqueezeBertForSequenceClassification", 3),
    ("squeezebert-tok", "SqueezeBertConfig", SQUEEZEBERT_SHAPE, "SqueezeBertForTokenClassification", 5),
    ("squeezebert-qa", "SqueezeBertConfig", SQUEEZEBERT_SHAPE, "SqueezeBertForQuestionAnswering", None),
    ("squeezebert-mc", "SqueezeBertConfig", SQUEEZEBERT_SHAPE, "SqueezeBertForMultipleChoice", None),
    ("mobilebert", "MobileBertConfig", MOBILEBERT_SHAPE, "MobileBertModel", None),
    ("mobilebert-mlm", "MobileBertConfig", MOBILEBERT_SHAPE, "MobileBertForMaskedLM", None),
    ("mobilebert-cls", "MobileBertConfig", MOBILEBERT_SHAPE, "MobileBertForSequenceClassification", 3),
    ("mobilebert-tok", "MobileBertConfig", MOBILEBERT_SHAPE, "MobileBertForTokenClassification", 5),
    ("mobilebert-qa", "MobileBertConfig", MOBILEBERT_SHAPE, "MobileBertForQuestionAnswering", None),
    ("mobilebert-mc", "MobileBertConfig", MOBILEBERT_SHAPE, "MobileBertForMultipleChoice", None),
    ("mobilebert-nsp", "MobileBertConfig", MOBILEBERT_SHAPE, "MobileBertForNextSentencePrediction", None),
    ("mobilebert-ffn1", "MobileBertConfig", dict(MOBILEBERT_SHAPE, num_feedforward_networks=1), "MobileBertModel", None),
    ("mobilebert-pretraining", "MobileBertConfig", MOBILEBERT_SHAPE, "MobileBertForPreTraining", None),  # its masked LM
    ("convbert", "ConvBertConfig", CONVBERT_SHAPE, "ConvBertModel", None),
    ("convbert-mlm", "ConvBertConfig", CONVBERT_SHAPE, "ConvBertForMaskedLM", None),
    ("convbert-cls", "ConvBertConfig", CONVBERT_SHAPE, "ConvBertForSequenceClassification", 3),
    ("convbert-tok", "ConvBertConfig", CONVBERT_SHAPE, "ConvBertForTokenClassification", 5),
    ("convbert-qa", "ConvBertConfig", CONVBERT_SHAPE, "ConvBertForQuestionAnswering", None),
    ("convbert-mc", "ConvBertConfig", CONVBERT_SHAPE, "ConvBertForMultipleChoice", None),  # each row a question of one choice
    # grouped linear MLPs (num_groups 2), 6 heads / head_ratio 3 = 2 heads (a third rank holds none),
    # kernels of 3, embeddings as wide as the blocks (no projection)
    ("convbert-groups", "ConvBertConfig", dict(BERT_SHAPE, num_attention_heads=6, head_ratio=3, conv_kernel_size=3,
                                               embedding_size=48, num_groups=2), "ConvBertModel", None),
    ("longformer", "LongformerConfig", LONGFORMER_SHAPE, "LongformerModel", None),
    ("longformer-mlm", "LongformerConfig", LONGFORMER_SHAPE, "LongformerForMaskedLM", None),
    ("longformer-cls", "LongformerConfig", LONGFORMER_SHAPE, "LongformerForSequenceClassification", 3),
    ("longformer-tok", "LongformerConfig", dict(LONGFORMER_SHAPE, attention_window=4),  # one window for all layers
     "LongformerForTokenClassification", 5),
    ("longformer-qa", "LongformerConfig", LONGFORMER_SHAPE, "LongformerForQuestionAnswering", None),
    ("longformer-mc", "LongformerConfig", LONGFORMER_SHAPE, "LongformerForMultipleChoice", None),
    ("xlm", "XLMConfig", XLM_SHAPE, "XLMModel", None),
    ("xlm-lang", "XLMConfig", XLM_LANGS, "XLMModel", None),
    ("xlm-mlm", "XLMConfig", XLM_SHAPE, "XLMWithLMHeadModel", None),
    ("xlm-cls", "XLMConfig", XLM_LANGS, "XLMForSequenceClassification", 3),
    # ReLU, and the sinusoid saved as the position table
    ("xlm-tok", "XLMConfig", dict(XLM_SHAPE, gelu_activation=False, sinusoidal_embeddings=True),
     "XLMForTokenClassification", 5),
    ("xlm-qa", "XLMConfig", XLM_LANGS, "XLMForQuestionAnsweringSimple", None),
    ("flaubert", "FlaubertConfig", XLM_SHAPE, "FlaubertModel", None),
    ("flaubert-mlm", "FlaubertConfig", XLM_SHAPE, "FlaubertWithLMHeadModel", None),
    ("flaubert-cls", "FlaubertConfig", XLM_LANGS, "FlaubertForSequenceClassification", 3),
    ("led-qa", "LEDConfig", LED_SHAPE, "LEDForQuestionAnswering", None),  # BART's QA head over LED's towers
]
# The Longformer fixtures given global tokens (the others: their heads' defaults).
LONGFORMER_GIVEN_GLOBAL = ("longformer", "longformer-mlm", "longformer-tok")
# A trait the fixtures exist to test must move the outputs well past the tests' 1e-4: DeBERTa's
# hidden states without the c2p or the p2c term differ by at least this much.
TRAIT_MIN_EFFECT = 1e-2


def segments(model) -> bool:
    return getattr(model.config, "type_vocab_size", 0) > 1


def is_decoder(model) -> bool:
    return model.config.model_type in ("llama", "gpt2", "qwen3")


def run_rows(model, rows, boxes=None, global_mask=None):
    """transformers' outputs for the right-padded batch, as float32 arrays of the real tokens;
    boxes: each row's token boxes (LayoutLM's bbox, the pads' all 0); global_mask: each row's
    Longformer global_attention_mask (the pads' 0)."""
    width = max(len(ids) for ids, _ in rows)
    pad = model.config.pad_token_id or 0
    ids = torch.tensor([r + [pad] * (width - len(r)) for r, _ in rows])
    types = torch.tensor([t + [0] * (width - len(t)) for _, t in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r, _ in rows])
    kwargs = dict(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    if segments(model):
        kwargs["token_type_ids"] = types
    if languages(model.config):
        kwargs["langs"] = types
    if boxes is not None:
        kwargs["bbox"] = torch.tensor([b + [[0, 0, 0, 0]] * (width - len(b)) for b in boxes])
    if global_mask is not None:
        kwargs["global_attention_mask"] = torch.tensor([g + [0] * (width - len(g)) for g in global_mask])
    base = getattr(model, model.base_model_prefix, model)  # a classifier's pooled features are not among its outputs
    if model.config.is_encoder_decoder:
        return run_seq2seq_rows(model, ids, mask)
    if type(model).__name__.endswith("ForMultipleChoice"):  # the rows as one question's choices
        return run_choices(model, base, kwargs, mask)
    with torch.no_grad():
        out = model(**kwargs)
        # a decoder's last hidden state is its final norm's output, which hidden_states may not hold
        last = base(input_ids=ids, attention_mask=mask).last_hidden_state if is_decoder(model) else out.hidden_states[-1]
        pooled = None if is_decoder(model) else pooled_features(model, base, last)
    real = mask.bool()
    hidden = last[real]
    if hasattr(out, "start_logits"):
        logits = torch.stack([out.start_logits, out.end_logits], dim=-1)[real]
    elif hasattr(out, "prediction_logits"):  # BertForPreTraining: its masked LM's
        logits = out.prediction_logits[real]
    elif hasattr(out, "logits"):  # per sequence, or per token (ElectraForPreTraining's [batch, tokens])
        per_sequence = out.logits.dim() == 2 and not type(model).__name__.endswith("ForPreTraining")
        logits = out.logits if per_sequence else out.logits[real]
    else:
        logits = None
    return hidden, pooled, logits


def run_choices(model, base, kwargs, mask):
    """A multiple-choice head on the rows as the choices of one question ([1, choices, tokens]):
    the rows' hidden states and pooled outputs, and a logit per row."""
    with torch.no_grad():
        out = model(**{k: (v[None] if torch.is_tensor(v) else v) for k, v in kwargs.items()})
        last = out.hidden_states[-1]
        pooled = pooled_features(model, base, last)
    return last[mask.bool()], pooled, out.logits.reshape(-1, 1)


def run_seq2seq_rows(model, ids, mask):
    """An encoder-decoder's task head: the encoder's last hidden state (what pf_encode returns as
    last_hidden_state), the classification head's dense + tanh (its pooled) and the logits."""
    captured = []
    head = getattr(model, "classification_head", None)
    hook = head.dense.register_forward_hook(lambda m, i, o: captured.append(torch.tanh(o))) if head else None
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask)
    if hook:
        hook.remove()
    real = mask.bool()
    hidden = out.encoder_last_hidden_state[real]
    if hasattr(out, "start_logits"):
        logits = torch.stack([out.start_logits, out.end_logits], dim=-1)[real]
    else:
        logits = out.logits
    return hidden, (captured[0] if captured else None), logits


POOLING_MODES = ["cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"]


def write_poolings(out, model):
    """sentence-transformers' Pooling in each mode on the right-padded batch's hidden states, the
    token types all 0 as for single sentences."""
    from sentence_transformers.sentence_transformer.modules import Pooling

    width = max(len(ids) for ids, _ in ROWS)
    ids = torch.tensor([r + [0] * (width - len(r)) for r, _ in ROWS])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r, _ in ROWS])
    with torch.no_grad():
        hidden = model(input_ids=ids, token_type_ids=torch.zeros_like(ids), attention_mask=mask).last_hidden_state
        for mode in POOLING_MODES:
            pooling = Pooling(hidden.shape[-1], pooling_mode=mode)
            pooled = pooling({"token_embeddings": hidden, "attention_mask": mask})["sentence_embedding"]
            pooled.numpy().astype("<f4").tofile(out / f"embed_{mode}.bin")


def write_last_token_pooling(out, model, rows):
    """A decoder-based embedder's sentence embedding (Qwen3-Embedding, e5-mistral): sentence-transformers'
    last-token Pooling of the right-padded batch."""
    from sentence_transformers.sentence_transformer.modules import Pooling

    width = max(len(ids) for ids, _ in rows)
    ids = torch.tensor([r + [0] * (width - len(r)) for r, _ in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r, _ in rows])
    with torch.no_grad():
        hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
        pooling = Pooling(hidden.shape[-1], pooling_mode="lasttoken")
        pooled = pooling({"token_embeddings": hidden, "attention_mask": mask})["sentence_embedding"]
    pooled.numpy().astype("<f4").tofile(out / "embed_lasttoken.bin")
    # sentence-transformers' modules as Qwen3-Embedding ships them: last-token pooling, normalised
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    (out / "modules.json").write_text(json.dumps(modules, indent=2) + "\n", encoding="ascii")
    (out / "1_Pooling").mkdir(exist_ok=True)
    (out / "1_Pooling" / "config.json").write_text(json.dumps(Pooling(hidden.shape[-1], pooling_mode="lasttoken")
                                                   .get_config_dict(), indent=2) + "\n", encoding="ascii")


def pooled_features(model, base, hidden):
    """What the library returns as pooled: BERT's pooler, or the first token through a
    classification head's dense and activation (RoBERTa's tanh, ELECTRA's gelu, DistilBERT's
    ReLU)."""
    if model.config.model_type in ("dpr", "xlm", "flaubert"):  # the first state itself (XLM: SequenceSummary's input)
        return hidden[:, 0]
    if model.config.model_type in ("deberta", "deberta-v2"):  # ContextPooler: dense and pooler_hidden_act on token 0
        pooler = getattr(model, "pooler", None)
        return pooler(hidden) if pooler is not None else None
    if getattr(base, "pooler_activation", None) is not None:  # ALBERT's pooler is a bare Linear
        return base.pooler_activation(base.pooler(hidden[:, 0]))
    if getattr(base, "pooler", None) is not None:
        return base.pooler(hidden)
    head = getattr(model, "classifier", None)
    if head is not None and hasattr(head, "dense"):  # RoBERTa's tanh, ELECTRA's gelu, RoFormer's hidden_act
        if model.config.model_type in ("roformer", "convbert"):
            return transformers.activations.ACT2FN[model.config.hidden_act](head.dense(hidden[:, 0]))
        return getattr(head, "activation", torch.tanh)(head.dense(hidden[:, 0]))
    if getattr(model, "pre_classifier", None) is not None:
        return torch.relu(model.pre_classifier(hidden[:, 0]))
    if getattr(model, "sequence_summary", None) is not None:  # ConvBERT's multiple choice: the last token
        return model.sequence_summary(hidden)
    return None


def make(name, config_class, shape, class_name, labels, seed):
    torch.manual_seed(seed)
    kwargs = dict(shape)
    if labels:
        kwargs["num_labels"] = labels
    config = getattr(transformers, config_class)(**kwargs)
    model = getattr(transformers, class_name)(config).eval()
    if config.model_type == "mobilebert":
        randomize_norms(model)
    if config.model_type == "convbert":
        randomize_attention_biases(model)
    out = FIXTURES / name
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out)
    out.mkdir(parents=True)
    model.save_pretrained(out)
    reloaded = getattr(transformers, class_name).from_pretrained(out, attn_implementation="eager").eval()
    rows = (DECODER_ROWS if is_decoder(reloaded) else SEQ2SEQ_ROWS if reloaded.config.is_encoder_decoder
            else LONGFORMER_ROWS if config.model_type == "longformer"
            else LANGUAGE_ROWS if languages(config)
            else ROWS if segments(reloaded) else [(ids, [0] * len(ids)) for ids, _ in ROWS])
    boxes = [layout_boxes(i, len(ids)) for i, (ids, _) in enumerate(rows)] if config.model_type == "layoutlm" else None
    if config.model_type == "convbert":  # its convolutions read the right pads: each row run alone
        hidden, pooled, logits = rows_alone(reloaded, rows)
    else:
        hidden, pooled, logits = run_rows(reloaded, rows, boxes)
        alone = [run_rows(reloaded, [row], boxes and [boxes[i]])[0] for i, row in enumerate(rows)]  # padding changes nothing
        assert torch.allclose(torch.cat(alone), hidden, atol=1e-5), f"{name}: padding changed the outputs"
    given = LONGFORMER_GLOBAL if name in LONGFORMER_GIVEN_GLOBAL else None
    hidden, pooled, logits = run_rows(reloaded, rows, boxes, given)
    alone = [run_rows(reloaded, [row], boxes and [boxes[i]], given and [given[i]])[0]  # padding changes nothing
             for i, row in enumerate(rows)]
    assert torch.allclose(torch.cat(alone), hidden, atol=1e-5), f"{name}: padding changed the outputs"
    lines = [f"rows={len(ROWS)}"]
    for i, (ids, types) in enumerate(rows):
        lines.append(f"ids{i}=" + ",".join(map(str, ids)))
        if config.model_type not in ("xlm", "flaubert") or languages(config):  # XLM's without languages: none
            lines.append(f"types{i}=" + ",".join(map(str, types)))
        if boxes:  # x0,y0,x1,y1 of each token, token after token
            lines.append(f"boxes{i}=" + ",".join(str(v) for box in boxes[i] for v in box))
        if given:  # 1 for each token with global attention
            lines.append(f"global{i}=" + ",".join(map(str, given[i])))
    # types are what the model was given: all 0 without segment embeddings
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    hidden.numpy().astype("<f4").tofile(out / "hidden.bin")
    if pooled is not None:
        pooled.numpy().astype("<f4").tofile(out / "pooled.bin")
    if logits is not None:
        logits.numpy().astype("<f4").tofile(out / "logits.bin")
    if name == "bert":
        write_poolings(out, reloaded)
    if name == "qwen3-bare":
        write_last_token_pooling(out, reloaded, rows)
    if name == "deberta-v3":
        check_disentangled_terms_matter(out, hidden, rows)
    if name == "layoutlm":
        check_boxes_matter(reloaded, hidden, rows, boxes)
    if name == "longformer":
        check_longformer_traits_matter(out, hidden, rows, given)
    if name == "xlm-lang":
        write_without_languages(out, reloaded, rows, hidden)
    arch = json.loads((out / "config.json").read_text())["architectures"]
    print(f"  {name}: {arch[0]}, hidden std {float(hidden.std()):.2f}"
          + (f", logits {tuple(logits.shape)} std {float(logits.std()):.2f}" if logits is not None else ""))


def write_without_languages(out, model, rows, hidden):
    """XLM given no langs adds no language rows (what pf_encode does without token types):
    hidden_nolangs.bin, which must differ from the languages' hidden states for the test to tell."""
    width = max(len(ids) for ids, _ in rows)
    ids = torch.tensor([r + [2] * (width - len(r)) for r, _ in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r, _ in rows])
    with torch.no_grad():
        plain = model(input_ids=ids, attention_mask=mask).last_hidden_state[mask.bool()]
    effect = float((plain - hidden).abs().max())
    assert effect > TRAIT_MIN_EFFECT, f"xlm-lang: the languages move the hidden states by only {effect}"
    print(f"  xlm-lang without languages: hidden states move by {effect:.3f}")
    plain.numpy().astype("<f4").tofile(out / "hidden_nolangs.bin")


def rows_alone(model, rows):
    """run_rows of each row alone, joined: what the library gives each row of a batch (ConvBERT's
    convolutions mix the right pads of a padded batch into the last real tokens in transformers)."""
    outs = [run_rows(model, [row]) for row in rows]
    return tuple(None if outs[0][k] is None else torch.cat([o[k] for o in outs]) for k in range(3))


def randomize_attention_biases(model):
    """ConvBERT's attention biases (the convolution's transformers makes 0) drawn at random."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".attention.self." in name and name.endswith("bias"):
                p.normal_(0.0, 0.2)


def randomize_norms(model):
    """Norm gains and biases away from transformers' 1 and 0 (MobileBERT's NoNorm, whose absence
    would otherwise go unseen), and the MLM head's bias away from 0."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm.weight" in name:
                p.uniform_(0.5, 1.5)
            elif "LayerNorm.bias" in name or name.endswith("predictions.bias"):
                p.normal_(0.0, 0.2)


def check_disentangled_terms_matter(out, hidden, rows):
    """The fixture fails to test c2p or p2c if dropping either leaves the outputs within reach."""
    for kept in (["c2p"], ["p2c"]):
        ablated = transformers.DebertaV2Model.from_pretrained(out, attn_implementation="eager", pos_att_type=kept).eval()
        effect = float((run_rows(ablated, rows)[0] - hidden).abs().max())
        assert effect > TRAIT_MIN_EFFECT, f"deberta-v3: only {kept} moves the hidden states by {effect}"
        print(f"  deberta-v3 with {kept} alone: hidden states move by {effect:.3f}")


def check_boxes_matter(model, hidden, rows, boxes):
    """The fixture fails to test the boxes, or the height and width tables, if all zero boxes, or
    boxes of one point each, leave the outputs within reach."""
    points = [[[x0, y0, x0, y0] for x0, y0, _, _ in row] for row in boxes]
    for what, other in (("all zero boxes", None), ("boxes of no width or height", points)):
        effect = float((run_rows(model, rows, other)[0] - hidden).abs().max())
        assert effect > TRAIT_MIN_EFFECT, f"layoutlm: {what} move the hidden states by only {effect}"
        print(f"  layoutlm with {what}: hidden states move by {effect:.3f}")


def check_longformer_traits_matter(out, hidden, rows, given):
    """The fixture fails to test Longformer's attention if windows wider than the rows, no global
    tokens, or the global tokens projected by the local weights leave the outputs within reach."""
    wide = transformers.LongformerModel.from_pretrained(out, attention_window=[32, 32]).eval()
    local_projections = transformers.LongformerModel.from_pretrained(out).eval()
    with torch.no_grad():
        for layer in local_projections.encoder.layer:
            attention = layer.attention.self
            for side in ("query", "key", "value"):
                getattr(attention, side + "_global").load_state_dict(getattr(attention, side).state_dict())
    model = transformers.LongformerModel.from_pretrained(out).eval()
    for what, ablated, mask in (("windows wider than the rows", wide, given), ("no global tokens", model, None),
                                ("the local projections for the global tokens", local_projections, given)):
        effect = float((run_rows(ablated, rows, None, mask)[0] - hidden).abs().max())
        assert effect > TRAIT_MIN_EFFECT, f"longformer: {what} move the hidden states by only {effect}"
        print(f"  longformer with {what}: hidden states move by {effect:.3f}")


ZERO_SHOT_TEXT = "The new phone has a great camera and a battery that lasts two days."
ZERO_SHOT_LABELS = ["technology", "cooking", "sports"]


def write_scores(path, results):
    """transformers' pipeline results as build/classify prints them: "score label", best first."""
    path.write_text("".join(f"{score:.6f} {label}\n" for label, score in results), encoding="utf-8")


def make_zero_shot(name="bart-mnli", seed=2100):
    """An NLI classifier with BART's tokenizer (tokenizer-bart) and MNLI's label names, and what
    transformers' zero-shot-classification and text-classification pipelines make of a text: the
    references of build/classify."""
    torch.manual_seed(seed)
    out = FIXTURES / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    labels = {0: "contradiction", 1: "neutral", 2: "entailment"}
    config = transformers.BartConfig(**dict(BART_SHAPE, vocab_size=420, max_position_embeddings=128), id2label=labels,
                                     label2id={v: k for k, v in labels.items()})
    transformers.BartForSequenceClassification(config).eval().save_pretrained(out)
    for file in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(FIXTURES / "tokenizer-bart" / file, out / file)
    zero_shot = transformers.pipeline("zero-shot-classification", model=str(out), device="cpu")
    for multi, file in ((False, "zero_shot.txt"), (True, "zero_shot_multi.txt")):
        result = zero_shot(ZERO_SHOT_TEXT, candidate_labels=ZERO_SHOT_LABELS, multi_label=multi)
        write_scores(out / file, zip(result["labels"], result["scores"]))
    plain = transformers.pipeline("text-classification", model=str(out), device="cpu", top_k=None)
    write_scores(out / "text_classification.txt", [(r["label"], r["score"]) for r in plain([ZERO_SHOT_TEXT])[0]])
    (out / "text.txt").write_text(ZERO_SHOT_TEXT + "\n" + ",".join(ZERO_SHOT_LABELS) + "\n", encoding="utf-8")
    print(f"  {name}: zero-shot {(out / 'zero_shot.txt').read_text().split()}")


LONGFORMER_TEXT_GLOBAL = [1, 5, 9]  # build/classify --global-tokens 1,5,9


def make_longformer_text(name="longformer-text", seed=2400):
    """A Longformer sentiment classifier with RoBERTa's tokenizer (tokenizer-roberta), windows of 4
    (the text's tokens reach well beyond them), and its label scores for a text as transformers
    gives them: its text-classification pipeline (global attention on the first token, the
    classifier's default: text_classification.txt), and softmax of the logits with global attention
    on tokens 1, 5 and 9 instead (global.txt): the references of build/classify's Longformer runs."""
    torch.manual_seed(seed)
    out = FIXTURES / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    labels = {0: "negative", 1: "neutral", 2: "positive"}
    config = transformers.LongformerConfig(**dict(LONGFORMER_SHAPE, vocab_size=420, max_position_embeddings=130,
                                                  attention_window=4),
                                           id2label=labels, label2id={v: k for k, v in labels.items()})
    transformers.LongformerForSequenceClassification(config).eval().save_pretrained(out)
    for file in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(FIXTURES / "tokenizer-roberta" / file, out / file)
    plain = transformers.pipeline("text-classification", model=str(out), device="cpu", top_k=None)
    write_scores(out / "text_classification.txt", [(r["label"], r["score"]) for r in plain([ZERO_SHOT_TEXT])[0]])
    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    model = transformers.LongformerForSequenceClassification.from_pretrained(out).eval()
    ids = tokenizer(ZERO_SHOT_TEXT, return_tensors="pt")["input_ids"]
    assert ids.shape[1] > 4 * 4, "the text must reach beyond the windows"
    mask = torch.zeros_like(ids)
    mask[0, LONGFORMER_TEXT_GLOBAL] = 1
    with torch.no_grad():
        scores = torch.softmax(model(input_ids=ids, global_attention_mask=mask).logits[0], dim=-1)
    write_scores(out / "global.txt", sorted(((labels[i], float(p)) for i, p in enumerate(scores)), key=lambda x: -x[1]))
    (out / "text.txt").write_text(ZERO_SHOT_TEXT + "\n", encoding="utf-8")
    print(f"  {name}: {ids.shape[1]} tokens, {(out / 'text_classification.txt').read_text().split()}, "
          f"{(out / 'global.txt').read_text().split()}")


RERANK_QUERY = "how long does the battery last"
RERANK_DOCUMENTS = ["Charging takes an hour; the battery then lasts long.", "Our team won the match in the last minute.",
                    "Preheat the oven before baking the bread.", "The battery lasts two days on one charge."]


def make_reranker(name="bert-rerank", seed=2200):
    """A cross-encoder (a BERT sequence classifier of one label) with BERT's tokenizer
    (tokenizer-bert), and what sentence-transformers' CrossEncoder scores of a query against
    documents: the reference of the server's /v1/rerank."""
    from sentence_transformers import CrossEncoder

    torch.manual_seed(seed)
    out = FIXTURES / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    config = transformers.BertConfig(**dict(BERT_SHAPE, vocab_size=420, max_position_embeddings=64), num_labels=1)
    transformers.BertForSequenceClassification(config).eval().save_pretrained(out)
    for file in ("tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy(FIXTURES / "tokenizer-bert" / file, out / file)
    scores = CrossEncoder(str(out), device="cpu").predict([(RERANK_QUERY, d) for d in RERANK_DOCUMENTS])
    reference = {"query": RERANK_QUERY, "documents": RERANK_DOCUMENTS, "scores": [float(x) for x in scores]}
    (out / "rerank.json").write_text(json.dumps(reference, indent=2) + "\n", encoding="utf-8")
    print(f"  {name}: CrossEncoder scores {[round(float(x), 4) for x in scores]}")


# build/layout's words: a receipt's words and their boxes on LayoutLM's 0..1000 scale (each
# tokenized alone, every token taking its word's box), one word split into several tokens.
LAYOUT_WORDS = [("Total", [60, 700, 180, 730]), ("amount", [190, 700, 330, 730]), ("due:", [340, 700, 420, 730]),
                ("twelve", [600, 700, 720, 731]), ("dollars", [730, 702, 870, 731]), ("unbelievably", [60, 760, 400, 795])]


def make_layout_words(name="layoutlm-words", seed=2300):
    """A LayoutLM token classifier with BERT's tokenizer (tokenizer-bert) and a document of words
    with boxes (words.txt, build/layout's input): labels.txt holds each word's label (its first
    token's), logits.bin the logits of the tokens as transformers' LayoutLM examples build them
    ([CLS] boxed 0,0,0,0, each word's tokens its box, [SEP] 1000,1000,1000,1000): the reference
    of build/layout's words mode."""
    torch.manual_seed(seed)
    out = FIXTURES / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    shape = dict(LAYOUTLM_SHAPE, vocab_size=420, hidden_size=16, intermediate_size=32, max_position_embeddings=64,
                 max_2d_position_embeddings=1024)  # the page's 0..1000 scale; narrow, so that the tables stay small
    config = transformers.LayoutLMConfig(**shape,
                                         num_labels=4, id2label={0: "O", 1: "B-KEY", 2: "B-VALUE", 3: "I-VALUE"},
                                         label2id={"O": 0, "B-KEY": 1, "B-VALUE": 2, "I-VALUE": 3})
    transformers.LayoutLMForTokenClassification(config).eval().save_pretrained(out)
    for file in ("tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy(FIXTURES / "tokenizer-bert" / file, out / file)
    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    model = transformers.LayoutLMForTokenClassification.from_pretrained(out, attn_implementation="eager").eval()
    ids, boxes, first = [tokenizer.cls_token_id], [[0, 0, 0, 0]], []
    for word, box in LAYOUT_WORDS:
        pieces = tokenizer(word, add_special_tokens=False)["input_ids"]
        first.append(len(ids))
        ids += pieces
        boxes += [box] * len(pieces)
    ids.append(tokenizer.sep_token_id)
    boxes.append([1000] * 4)
    assert ids == tokenizer(" ".join(w for w, _ in LAYOUT_WORDS))["input_ids"], "words tokenized alone differ"
    assert max(len(tokenizer(w, add_special_tokens=False)["input_ids"]) for w, _ in LAYOUT_WORDS) > 1
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids]), bbox=torch.tensor([boxes])).logits[0]
    logits.numpy().astype("<f4").tofile(out / "logits.bin")
    (out / "words.txt").write_text("".join(f"{w} {' '.join(map(str, b))}\n" for w, b in LAYOUT_WORDS), encoding="utf-8")
    labels = [config.id2label[int(logits[i].argmax())] for i in first]
    (out / "labels.txt").write_text("".join(f"{w} {label}\n" for (w, _), label in zip(LAYOUT_WORDS, labels)),
                                    encoding="utf-8")
    print(f"  {name}: {len(ids)} tokens, labels {labels}")


# Funnel Transformer (issue 35): 4 heads of d_head 10 (3 ranks split them 2, 1, 1; their width
# 40 not hidden's 48), blocks [2, 1, 2] (two poolings). Three fixtures between them take both
# attention types, both pooling types, separate_cls on and off, truncate_seq on and off,
# pool_q_only on and off and a block repeated; rows of 7, 12 and 6 tokens (odd and even lengths
# through each pooling), the class token of rows 1 and 2 of segment 2 as FunnelTokenizer gives it
# (row 0's segments all 0: pf_forward's masked-LM check runs row 0 without any), row 1 a pair of
# segments. The full model (FunnelModel's decoder: the last block upsampled, the first block's
# output added, num_decoder_layers 1) under each of its heads.
FUNNEL_SHAPE = dict(vocab_size=120, d_model=48, n_head=4, d_head=10, d_inner=96, block_sizes=[2, 1, 2],
                    num_decoder_layers=1, hidden_act="gelu_new", hidden_dropout=0.0, attention_dropout=0.0,
                    activation_dropout=0.0, initializer_range=0.5)
FUNNEL_ROWS = [
    ([2, 17, 45, 88, 9, 63, 3], [0] * 7),
    ([2, 5, 77, 31, 101, 3, 54, 12, 96, 40, 8, 3], [2] + [0] * 5 + [1] * 6),
    ([2, 119, 64, 33, 71, 3], [2] + [0] * 5),
]
FUNNEL_FIXTURES = [
    # name, class, the shape's changes, labels
    ("funnel", "FunnelBaseModel", dict(attention_type="relative_shift", pooling_type="mean", separate_cls=True,
                                       truncate_seq=True, pool_q_only=True, block_repeats=[1, 2, 1]), None),
    ("funnel-cls", "FunnelForSequenceClassification", dict(attention_type="factorized", pooling_type="mean",
                                                           separate_cls=False, pool_q_only=False), 3),
    ("funnel-mc", "FunnelForMultipleChoice", dict(attention_type="factorized", pooling_type="max", separate_cls=True,
                                                  truncate_seq=False, pool_q_only=True), None),
    ("funnel-full", "FunnelModel", dict(attention_type="relative_shift", pooling_type="mean", separate_cls=True,
                                        truncate_seq=True, pool_q_only=True, block_repeats=[2, 1, 1]), None),
    ("funnel-mlm", "FunnelForMaskedLM", dict(attention_type="relative_shift", pooling_type="mean", separate_cls=True,
                                             truncate_seq=True, pool_q_only=True), None),
    ("funnel-tok", "FunnelForTokenClassification", dict(attention_type="factorized", pooling_type="max",
                                                        separate_cls=False, pool_q_only=False), 5),
    ("funnel-qa", "FunnelForQuestionAnswering", dict(attention_type="factorized", pooling_type="mean",
                                                     separate_cls=True, truncate_seq=False, pool_q_only=True), None),
    ("funnel-pretraining", "FunnelForPreTraining", dict(attention_type="relative_shift", pooling_type="max",
                                                        separate_cls=True, truncate_seq=True, pool_q_only=False), None),
]


def make_funnel(name, class_name, changes, labels, seed):
    """A Funnel fixture: transformers' outputs of each row run alone (the base model's last
    hidden state has each row's pooled length, the full model's each row's tokens). A right-padded
    batch pools the pads into the real tokens and moves the positions (transformers' own batch
    differs from its rows alone), so the library computes each row as alone, as it does every
    encoder's."""
    torch.manual_seed(seed)
    kwargs = dict(FUNNEL_SHAPE, **changes)
    if labels:
        kwargs["num_labels"] = labels
    model = getattr(transformers, class_name)(transformers.FunnelConfig(**kwargs)).eval()
    with torch.no_grad():  # the relative terms larger than their init, the biases not 0, so that each matters
        for pname, p in model.named_parameters():
            if pname.split(".")[-1] in ("r_w_bias", "r_r_bias", "r_s_bias", "r_kernel", "seg_embed"):
                p.normal_(0.0, 0.3)
            elif pname.endswith(".bias"):
                p.normal_(0.0, 0.2)
    out = FIXTURES / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    model.save_pretrained(out)
    model = getattr(transformers, class_name).from_pretrained(out).eval()
    hidden, pooled, logits = [], [], []
    choice = class_name.endswith("ForMultipleChoice")  # each row a question of one choice
    with torch.no_grad():
        for ids, types in FUNNEL_ROWS:
            shape = (1, 1, len(ids)) if choice else (1, len(ids))
            result = model(input_ids=torch.tensor(ids).view(shape), token_type_ids=torch.tensor(types).view(shape),
                           output_hidden_states=True)
            last = result.hidden_states[-1][0]
            hidden.append(last)
            if hasattr(model, "classifier") and hasattr(model.classifier, "linear_hidden"):  # the pooled first token
                pooled.append(torch.tanh(model.classifier.linear_hidden(last[0])))
            if hasattr(result, "start_logits"):
                logits.append(torch.stack([result.start_logits[0], result.end_logits[0]], dim=-1).reshape(-1))
            elif hasattr(result, "logits"):
                logits.append(result.logits.reshape(-1))
        width = max(len(ids) for ids, _ in FUNNEL_ROWS)  # transformers' own padded batch: other numbers
        batch = torch.tensor([ids + [0] * (width - len(ids)) for ids, _ in FUNNEL_ROWS])
        mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in FUNNEL_ROWS])
        types = torch.tensor([t + [0] * (width - len(t)) for _, t in FUNNEL_ROWS])
        padded = model.funnel(input_ids=batch, attention_mask=mask, token_type_ids=types).last_hidden_state \
            if hasattr(model, "funnel") else model(input_ids=batch, attention_mask=mask, token_type_ids=types).last_hidden_state
    moved = float((padded[0, :len(hidden[0])] - hidden[0]).abs().max())
    lines = [f"rows={len(FUNNEL_ROWS)}"]
    for i, (ids, types) in enumerate(FUNNEL_ROWS):
        lines.append(f"ids{i}=" + ",".join(map(str, ids)))
        lines.append(f"types{i}=" + ",".join(map(str, types)))
    lines.append("output_lengths=" + ",".join(str(len(h)) for h in hidden))  # each row's tokens in hidden.bin
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    torch.cat(hidden).numpy().astype("<f4").tofile(out / "hidden.bin")
    if pooled:
        torch.stack(pooled).numpy().astype("<f4").tofile(out / "pooled.bin")
    if logits:
        torch.cat(logits).numpy().astype("<f4").tofile(out / "logits.bin")
    print(f"  {name}: {class_name}, tokens {[len(h) for h in hidden]}, hidden std {float(torch.cat(hidden).std()):.2f}, "
          f"row 0 in transformers' padded batch moves by {moved:.3f}")


# BigBird: BERT's shape in 4 heads (3 ranks split them unevenly), gelu_new, blocks of 4 tokens and 2
# random blocks: rows of more than (5 + 2 * 2) * 4 = 36 tokens attend block-sparse (rows 0 and 2: 50
# and 39 tokens, padded by transformers to 13 and 10 blocks), the 14-token row (two segments) and the
# 36-token row (the most that is not sparse) fully, as transformers switches them to original_full.
# Biases drawn at random (use_bias matters); big-bird-rescale: rescale_embeddings, no q/k/v biases,
# blocks of 3 and 1 random block (rows of more than 21 tokens sparse: all but the 14-token one);
# big-bird-tok: attention_type original_full (every row attends fully).
BIG_BIRD_SHAPE = dict(vocab_size=120, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
                      max_position_embeddings=64, type_vocab_size=2, initializer_range=0.2, hidden_act="gelu_new",
                      hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, block_size=4, num_random_blocks=2,
                      pad_token_id=0, bos_token_id=1, eos_token_id=2, sep_token_id=3)
BIG_BIRD_ROWS = [
    ([1] + [(7 * t + 5) % 115 + 4 for t in range(48)] + [2], [0] * 50),
    ([1, 5, 77, 31, 101, 3, 54, 12, 96, 40, 8, 66, 19, 3], [0] * 6 + [1] * 8),
    ([1] + [(11 * t + 17) % 115 + 4 for t in range(37)] + [2], [0] * 39),
    ([1] + [(13 * t + 29) % 115 + 4 for t in range(34)] + [2], [0] * 36),  # (5 + 2 * 2) * 4 tokens: still full
]
BIG_BIRD_FIXTURES = [  # dir, model class, config changes, label count
    ("big-bird", "BigBirdModel", {}, None),
    ("big-bird-mlm", "BigBirdForMaskedLM", {}, None),
    ("big-bird-cls", "BigBirdForSequenceClassification", {}, 3),
    ("big-bird-tok", "BigBirdForTokenClassification", dict(attention_type="original_full"), 5),
    ("big-bird-mc", "BigBirdForMultipleChoice", {}, None),
    ("big-bird-pretraining", "BigBirdForPreTraining", {}, None),  # its masked LM; NSP unused
    ("big-bird-rescale", "BigBirdModel", dict(rescale_embeddings=True, use_bias=False, block_size=3,
                                              num_random_blocks=1), None),
]


def big_bird_rows_alone(model, rows):
    """BigBird's outputs of each row run alone, as the library computes every row: in a padded batch
    transformers chooses full or block-sparse attention, and cuts the blocks, by the batch's width.
    Its model switches itself to original_full for a short input and stays so: each row starts from
    the config's attention_type. Returns the hidden states, pooled outputs (the pooler's tanh),
    logits, and each row's attention type."""
    base = getattr(model, "bert", model)
    choice = type(model).__name__.endswith("ForMultipleChoice")  # each row a question of one choice
    hidden, pooled, logits, used = [], [], [], []
    with torch.no_grad():
        for ids, types in rows:
            base.set_attention_type(model.config.attention_type)
            shape = (1, 1, len(ids)) if choice else (1, len(ids))
            result = model(input_ids=torch.tensor(ids).view(shape), token_type_ids=torch.tensor(types).view(shape),
                           output_hidden_states=True)
            used.append(base.attention_type)
            last = result.hidden_states[-1].reshape(len(ids), -1)
            hidden.append(last)
            if base.pooler is not None:
                pooled.append(base.activation(base.pooler(last[0])))
            if hasattr(result, "prediction_logits"):  # ForPreTraining: its masked LM's
                logits.append(result.prediction_logits[0].reshape(-1))
            elif hasattr(result, "logits"):
                logits.append(result.logits.reshape(-1))
    return hidden, pooled, logits, used


def make_big_bird(name, class_name, changes, labels, seed):
    torch.manual_seed(seed)
    kwargs = dict(BIG_BIRD_SHAPE, **changes)
    if labels:
        kwargs["num_labels"] = labels
    model = getattr(transformers, class_name)(transformers.BigBirdConfig(**kwargs)).eval()
    with torch.no_grad():  # biases away from 0 so that each one matters
        for pname, p in model.named_parameters():
            if pname.endswith(".bias") and "LayerNorm" not in pname:
                p.normal_(0.0, 0.2)
    out = FIXTURES / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    model.save_pretrained(out)
    model = getattr(transformers, class_name).from_pretrained(out).eval()
    hidden, pooled, logits, used = big_bird_rows_alone(model, BIG_BIRD_ROWS)
    config = model.config
    limit = (5 + 2 * config.num_random_blocks) * config.block_size
    for (ids, _), kind in zip(BIG_BIRD_ROWS, used):  # the fixture reaches block-sparse attention where it says
        want = "block_sparse" if config.attention_type == "block_sparse" and len(ids) > limit else "original_full"
        assert kind == want, f"{name}: a row of {len(ids)} tokens ran {kind}, not {want}"
    if name in ("big-bird", "big-bird-rescale"):
        check_big_bird_blocks_matter(name, out, class_name, hidden)
    lines = [f"rows={len(BIG_BIRD_ROWS)}"]
    for i, (ids, types) in enumerate(BIG_BIRD_ROWS):
        lines.append(f"ids{i}=" + ",".join(map(str, ids)))
        lines.append(f"types{i}=" + ",".join(map(str, types)))
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    torch.cat(hidden).numpy().astype("<f4").tofile(out / "hidden.bin")
    if pooled:
        torch.stack(pooled).numpy().astype("<f4").tofile(out / "pooled.bin")
    if logits:
        torch.cat(logits).numpy().astype("<f4").tofile(out / "logits.bin")
    print(f"  {name}: {class_name}, rows {used}, hidden std {float(torch.cat(hidden).std()):.2f}")


def check_big_bird_blocks_matter(name, out, class_name, hidden):
    """The fixture fails to test the block-sparse attention if full attention, or one random block
    more (block 0 counted once more: transformers' random blocks in eval mode), leave the sparse
    rows' outputs within reach. (num_random_blocks 0 fails in transformers' block-sparse code.)"""
    sparse = [0, 2]
    random_blocks = transformers.BigBirdConfig.from_pretrained(out).num_random_blocks
    for what, changes in (("original_full", dict(attention_type="original_full")),
                          ("one random block more", dict(num_random_blocks=random_blocks + 1))):
        other = getattr(transformers, class_name).from_pretrained(out, **changes).eval()
        moved, _, _, used = big_bird_rows_alone(other, BIG_BIRD_ROWS)
        rows = [i for i in sparse if what == "original_full" or used[i] == "block_sparse"]  # still sparse there
        effect = min(float((moved[i] - hidden[i]).abs().max()) for i in rows)
        assert rows and effect > TRAIT_MIN_EFFECT, f"{name}: {what} moves the sparse rows by only {effect}"
        print(f"  {name} with {what}: sparse rows {rows} move by at least {effect:.3f}")



# XLNet (issue 36): 4 heads of d_head 10 (3 ranks split them 2, 1, 1), 2 layers. Rows as
# XLNetTokenizer ends them, <sep> (4) and <cls> (3) last, the class token's segment 2; row 1 a pair
# of segments. Between them the fixtures take attn_type "bi" and "uni", clamp_len off and short
# enough to clamp (3 < the 11 of row 1), both ff_activations transformers' configs name, and a
# model run without token_type_ids (no segment term; the library's zeros give a term the same for
# every key of a query, which the softmax cancels). Each row run alone; transformers' own
# left-padded batch (XLNet's padding side) gives the same numbers, checked here.
XLNET_SHAPE = dict(vocab_size=120, d_model=40, n_layer=2, n_head=4, d_inner=64, dropout=0.0, initializer_range=0.3,
                   pad_token_id=5)
XLNET_ROWS = [
    ([17, 45, 88, 9, 63, 4, 3], [0] * 6 + [2]),
    ([21, 77, 31, 101, 4, 54, 12, 96, 40, 8, 4, 3], [0] * 5 + [1] * 6 + [2]),
    ([119, 64, 33, 71, 4, 3], [0] * 5 + [2]),
]
XLNET_FIXTURES = [
    # name, class, the shape's changes, labels, token types given
    ("xlnet", "XLNetModel", dict(attn_type="bi", ff_activation="gelu"), None, True),
    ("xlnet-cls", "XLNetForSequenceClassification", dict(attn_type="uni", clamp_len=3, ff_activation="relu"), 3, True),
    ("xlnet-tok", "XLNetForTokenClassification", dict(attn_type="bi", clamp_len=3, ff_activation="gelu"), 5, False),
    ("xlnet-qa", "XLNetForQuestionAnsweringSimple", dict(attn_type="uni", ff_activation="gelu"), None, True),
    ("xlnet-mc", "XLNetForMultipleChoice", dict(attn_type="bi", clamp_len=5, ff_activation="relu"), None, True),
]


def make_xlnet(name, class_name, changes, labels, with_types, seed):
    """An XLNet fixture: transformers' outputs of each row run alone (hidden states, the
    SequenceSummary's pooled output where the head has one, the head's logits)."""
    torch.manual_seed(seed)
    kwargs = dict(XLNET_SHAPE, **changes)
    if labels:
        kwargs["num_labels"] = labels
    model = getattr(transformers, class_name)(transformers.XLNetConfig(**kwargs)).eval()
    with torch.no_grad():  # the relative terms and biases away from their init, so that each matters
        for pname, p in model.named_parameters():
            if pname.split(".")[-1] in ("r_w_bias", "r_r_bias", "r_s_bias", "seg_embed"):
                p.normal_(0.0, 0.5)
            elif pname.endswith(".bias"):
                p.normal_(0.0, 0.2)
    out = FIXTURES / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    model.save_pretrained(out)
    model = getattr(transformers, class_name).from_pretrained(out).eval()
    hidden, pooled, logits = [], [], []
    choice = class_name.endswith("ForMultipleChoice")  # each row a question of one choice
    with torch.no_grad():
        for ids, types in XLNET_ROWS:
            shape = (1, 1, len(ids)) if choice else (1, len(ids))
            result = model(input_ids=torch.tensor(ids).view(shape),
                           token_type_ids=torch.tensor(types).view(shape) if with_types else None,
                           output_hidden_states=True)
            last = result.hidden_states[-1][0]
            hidden.append(last)
            if hasattr(model, "sequence_summary"):  # the last token's projection + tanh
                pooled.append(model.sequence_summary(last[None])[0])
            if hasattr(result, "start_logits"):
                logits.append(torch.stack([result.start_logits[0], result.end_logits[0]], dim=-1).reshape(-1))
            elif hasattr(result, "logits"):
                logits.append(result.logits.reshape(-1))
        width = max(len(ids) for ids, _ in XLNET_ROWS)  # transformers' own batch, padded on the left
        batch = torch.tensor([[5] * (width - len(ids)) + ids for ids, _ in XLNET_ROWS])
        mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids, _ in XLNET_ROWS])
        types = torch.tensor([[3] * (width - len(t)) + t for _, t in XLNET_ROWS])
        base = model.transformer if hasattr(model, "transformer") else model
        # attn_type "uni" with a mask over a batch raises in transformers 5.24 (attn_mask += data_mask
        # in place, [q, k, 1, 1] against [q, k, batch, 1]): rows alone only
        padded = None if kwargs["attn_type"] == "uni" else \
            base(input_ids=batch, attention_mask=mask, token_type_ids=types if with_types else None).last_hidden_state
    moved = 0.0 if padded is None else max(float((padded[i, width - len(h):] - h).abs().max()) for i, h in enumerate(hidden))
    assert moved < 1e-4, f"{name}: transformers' left-padded batch moves the rows by {moved}"
    lines = [f"rows={len(XLNET_ROWS)}"]
    for i, (ids, types) in enumerate(XLNET_ROWS):
        lines.append(f"ids{i}=" + ",".join(map(str, ids)))
        if with_types:
            lines.append(f"types{i}=" + ",".join(map(str, types)))
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    torch.cat(hidden).numpy().astype("<f4").tofile(out / "hidden.bin")
    if pooled:
        torch.stack(pooled).numpy().astype("<f4").tofile(out / "pooled.bin")
    if logits:
        torch.cat(logits).numpy().astype("<f4").tofile(out / "logits.bin")
    print(f"  {name}: {class_name}, hidden std {float(torch.cat(hidden).std()):.2f}, left-padded batch moves "
          + ("(not run: uni)" if padded is None else f"{moved:.1e}"))


# XLNetLMHeadModel's greedy generation (issue 36) as transformers' generate() runs it: each step the
# tokens and a dummy after them, the dummy hidden from every token by perm_mask and predicted by
# the query stream (target_mapping); with memory (use_mems_eval) each step after the first runs the
# last two tokens over the memory of the others (mem_len rows kept: 6 cuts it within these
# lengths; null keeps all); without, every token again (with attn_type "uni" the memory changes
# nothing: a token sees no later one). The shape and init as the encoders'.
XLNET_LM_FIXTURES = [
    # name, the shape's changes, prompt, new tokens
    ("xlnet-lm", dict(attn_type="bi", mem_len=6, use_mems_eval=True), [17, 45, 88, 9, 63, 21, 77], 12),
    ("xlnet-lm-allmem", dict(attn_type="bi", clamp_len=4, mem_len=None, use_mems_eval=True), [31, 101, 54, 12, 96], 12),
    ("xlnet-lm-nomem", dict(attn_type="uni", clamp_len=3, use_mems_eval=False, ff_activation="relu"),
     [119, 64, 33, 71, 40, 8], 10),
]


def make_xlnet_lm(name, changes, prompt, new_tokens, seed):
    """An XLNetLMHeadModel fixture: transformers' greedy generate() of the prompt. The weights are
    drawn again (the next seed) until no eos ends the generation early (every step runs), the tokens
    are not one repeated, and (with memory) the memory changes them."""
    for attempt in range(50):
        torch.manual_seed(seed + 1000 * attempt)
        model = transformers.XLNetLMHeadModel(transformers.XLNetConfig(**dict(XLNET_SHAPE, **changes))).eval()
        with torch.no_grad():
            for pname, p in model.named_parameters():
                if pname.split(".")[-1] in ("r_w_bias", "r_r_bias", "r_s_bias", "seg_embed", "mask_emb"):
                    p.normal_(0.0, 0.5)
                elif pname.endswith(".bias"):
                    p.normal_(0.0, 0.2)
        out = FIXTURES / name
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        model.save_pretrained(out)
        model = transformers.XLNetLMHeadModel.from_pretrained(out).eval()
        with torch.no_grad():
            generated = model.generate(torch.tensor([prompt]), max_new_tokens=new_tokens, do_sample=False,
                                       num_beams=1)[0, len(prompt):].tolist()
            if model.config.use_mems_eval:  # the memory changes the tokens: else the test could not tell it
                no_memory = model.generate(torch.tensor([prompt]), max_new_tokens=new_tokens, do_sample=False,
                                           num_beams=1, use_mems=False)[0, len(prompt):].tolist()
            else:
                no_memory = None
        if len(generated) == new_tokens and len(set(generated)) >= 3 and no_memory != generated:
            break
    else:
        raise SystemExit(f"{name}: no weights in 50 draws generate {new_tokens} tokens that the memory changes")
    lines = ["prompt_text=(ids)", "prompt_ids=" + ",".join(map(str, prompt)), "greedy_ids=" + ",".join(map(str, generated)),
             f"max_new_tokens={new_tokens}", f"vocab_size={model.config.vocab_size}"]
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    print(f"  {name}: draw {attempt}, greedy {generated}" + (f", without memory {no_memory}" if no_memory else ""))

def main() -> None:
    torch.set_num_threads(1)
    only = set(sys.argv[1:])
    for i, (name, config_class, shape, class_name, labels) in enumerate(FIXTURE_HEADS):
        if not only or name in only:
            make(name, config_class, shape, class_name, labels, seed=2000 + i)
    if not only or "bart-mnli" in only:
        make_zero_shot()
    if not only or "bert-rerank" in only:
        make_reranker()
    if not only or "longformer-text" in only:
        make_longformer_text()
    if not only or "layoutlm-words" in only:
        make_layout_words()
    for i, (name, class_name, changes, labels) in enumerate(FUNNEL_FIXTURES):
        if not only or name in only:
            make_funnel(name, class_name, changes, labels, seed=2500 + i)
    for i, (name, class_name, changes, labels) in enumerate(BIG_BIRD_FIXTURES):
        if not only or name in only:
            make_big_bird(name, class_name, changes, labels, seed=2600 + i)
    for i, (name, class_name, changes, labels, with_types) in enumerate(XLNET_FIXTURES):
        if not only or name in only:
            make_xlnet(name, class_name, changes, labels, with_types, seed=2600 + i)
    for i, (name, changes, prompt, new_tokens) in enumerate(XLNET_LM_FIXTURES):
        if not only or name in only:
            make_xlnet_lm(name, changes, prompt, new_tokens, seed=2700 + i)


if __name__ == "__main__":
    main()
