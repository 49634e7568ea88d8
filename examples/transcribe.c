/* transcribe: speech to text on N ranks, with a CTC model (Wav2Vec2ForCTC, HubertForCTC) or a
   speech encoder-decoder (WhisperForConditionalGeneration, Speech2TextForConditionalGeneration).

   build/transcribe MODEL_DIR SPEECH.wav [--gpus N] [--device cpu|cuda|auto] [-n MAX_NEW_TOKENS]
                    [--language CODE] [--task transcribe|translate] [--timestamps]

   The WAV file holds mono PCM (16-bit integers or 32-bit floats) at the rate the model's feature
   extractor expects (preprocessor_config.json's sampling_rate, 16 kHz for these models: resample
   before, `sox in.wav -r 16000 -c 1 out.wav`). It goes through the feature extractor
   (Wav2Vec2FeatureExtractor's normalisation, WhisperFeatureExtractor's log-mel spectrogram of
   the first chunk_length seconds, or Speech2TextFeatureExtractor's filter banks), then the model: greedy CTC decoding (as
   Wav2Vec2Processor.batch_decode), or generation with the model's generation_config.json (Whisper:
   its language and task prompt, or detection of the language where it names none; --language (and
   --task, transcribe by default) set them, as generate(language=..., task=...) does; -n: at most
   this many new tokens)
   decoded without the special tokens (as batch_decode(..., skip_special_tokens=True)); Whisper's
   timestamp tokens are left out too, or with --timestamps (generate(return_timestamps=True), also
   where generation_config.json's return_timestamps is true) printed between the text's segments as
   "<|0.00|> text<|1.20|>", as decode(..., decode_with_timestamps=True, skip_special_tokens=True)
   does for one window. The text is printed on one line. Errors
   go to stderr (exit 1; 2 for the command line). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../parallelformers.h"
#include "media.h"

/* ids as text without the special tokens, appended to *text (malloc'd, *used bytes). */
static pf_result append_text(pf_tokenizer *tokenizer, const int32_t *ids, int count, char **text, size_t *used) {
    int32_t *kept = (int32_t *)malloc((size_t)(count ? count : 1) * sizeof(int32_t));
    size_t n = 0, length = 0;
    if (!kept) return PF_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < count; i++)
        if (!pf_tokenizer_is_special(tokenizer, ids[i])) kept[n++] = ids[i];
    pf_result r = pf_detokenize(tokenizer, kept, n, NULL, 0, &length);
    if (r == PF_ERROR_BUFFER_TOO_SMALL) r = PF_OK;
    char *grown = r ? NULL : (char *)realloc(*text, *used + length + 1);
    if (!r && !grown) r = PF_ERROR_OUT_OF_MEMORY;
    if (!r) {
        *text = grown;
        r = pf_detokenize(tokenizer, kept, n, *text + *used, length + 1, &length);
        if (!r) *used += length, (*text)[*used] = 0;
    }
    free(kept);
    return r;
}

/* The first generated sequence as text without its special tokens (malloc'd into *text). Whisper's
   timestamp tokens (timestamp_begin and above; 0: none) are dropped, or with stamps written as
   "<|1.20|>" (0.02 s a step) between the decoded pieces of text. */
static pf_result decode_text(pf_model *model, pf_generation *g, int32_t timestamp_begin, int stamps, char **text) {
    pf_tokenizer *tokenizer = pf_model_tokenizer(model);
    if (!tokenizer) return PF_ERROR_INVALID_ARGUMENT;
    size_t used = 0;
    if (!(*text = (char *)calloc(1, 1))) return PF_ERROR_OUT_OF_MEMORY;
    const int32_t *ids = g->tokens[0];
    int n = g->lengths[0], start = 0;
    pf_result r = PF_OK;
    for (int i = 0; !r && i <= n; i++) {
        int stamp = i < n && timestamp_begin > 0 && ids[i] >= timestamp_begin;
        if (i < n && !stamp) continue;
        r = append_text(tokenizer, ids + start, i - start, text, &used);
        start = i + 1;
        if (r || !stamp || !stamps) continue;
        char mark[32];
        int length = snprintf(mark, sizeof mark, "<|%.2f|>", (double)(ids[i] - timestamp_begin) * 0.02);
        char *grown = (char *)realloc(*text, used + (size_t)length + 1);
        if (!grown) r = PF_ERROR_OUT_OF_MEMORY;
        else memcpy(grown + used, mark, (size_t)length + 1), *text = grown, used += (size_t)length;
    }
    return r;
}

/* The usage to out; 0 for --help (stdout), 2 for a mistake (stderr). */
static int usage_to(FILE *out) {
    fprintf(out, "usage: transcribe MODEL_DIR SPEECH.wav [--gpus N] [--device cpu|cuda|auto] [-n MAX_NEW_TOKENS]\n"
                    "                  [--language CODE] [--task transcribe|translate] [--timestamps]\n"
                    "--gpus N: ranks (GPUs, or CPU threads without CUDA); default 0: every GPU, or every core\n");
    return out == stdout ? 0 : 2;
}

static int usage(void) { return usage_to(stderr); }

int main(int argc, char **argv) {
    const char *dir = NULL, *wav = NULL, *why = "", *language = NULL, *task = NULL;
    int gpus = 0 /* every device */, max_new_tokens = 0, timestamps = 0;
    pf_device device = PF_DEVICE_AUTO;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage_to(stdout);
        if (!strcmp(a, "--gpus") && v) gpus = atoi(argv[++i]);
        else if (!strcmp(a, "-n") && v) max_new_tokens = atoi(argv[++i]);
        else if (!strcmp(a, "--language") && v) language = argv[++i];
        else if (!strcmp(a, "--task") && v) task = argv[++i];
        else if (!strcmp(a, "--timestamps")) timestamps = 1;
        else if (!strcmp(a, "--device") && v) {
            device = !strcmp(v, "cpu") ? PF_DEVICE_CPU : !strcmp(v, "cuda") ? PF_DEVICE_CUDA : PF_DEVICE_AUTO;
            if (strcmp(v, "cpu") && strcmp(v, "cuda") && strcmp(v, "auto")) return usage();
            i++;
        } else if (a[0] != '-' && !dir) dir = a;
        else if (a[0] != '-' && !wav) wav = a;
        else return usage();
    }
    if (!dir || !wav || gpus < 0 || max_new_tokens < 0 || (task && !language) ||
        (task && strcmp(task, "transcribe") && strcmp(task, "translate")) ||
        (language && (strlen(language) < 2 || strlen(language) > 16)))
        return usage();
    int num_samples = 0, rate = 0;
    size_t file_size = 0;
    unsigned char *file = media_read_file(wav, MEDIA_MAX_FILE_BYTES, &file_size);
    float *samples = file ? media_wav_samples(file, file_size, &num_samples, &rate, &why) : NULL;
    if (!file) why = "cannot be read (or is over 1 GiB)";
    free(file);
    if (!samples) {
        fprintf(stderr, "transcribe: %s %s\n", wav, why);
        return 1;
    }
    char error[512] = "";
    pf_audio_processor *processor = NULL;
    pf_model *model = NULL;
    float *features = NULL;
    pf_encoding *e = NULL;
    char *text = NULL;
    pf_generation generation = {0};
    int status = 1, count = 0;
    size_t rows = 0, columns = 0;
    pf_result r = pf_audio_processor_load(dir, &processor, error, sizeof error);
    pf_audio_processor_info audio = pf_audio_processor_get_info(processor);
    if (!r && audio.sampling_rate != rate) {
        snprintf(error, sizeof error, "%s is at %d Hz, the model wants %d Hz: resample it first", wav, rate,
                 audio.sampling_rate);
        r = PF_ERROR_INVALID_ARGUMENT;
    }
    if (!r) r = pf_audio_features_size(processor, (size_t)num_samples, &rows, &columns, error, sizeof error);
    if (r) {
        fprintf(stderr, "transcribe: %s: %s\n", pf_result_string(r), error);
        goto done;
    }
    pf_parallel_options po = pf_parallel_options_init();
    po.device = device;
    if ((r = pf_load(dir, NULL, &model)) || (r = pf_parallelize(model, gpus, &po))) {
        fprintf(stderr, "transcribe: %s: %s\n", pf_result_string(r), pf_error_message(model));
        goto done;
    }
    /* The features' size comes from preprocessor_config.json: compared with what the model takes
       before they are computed (a chunk_length of an hour pads a second of audio to 360,000 frames). */
    pf_model_info info = pf_get_info(model);
    if (info.is_encoder_decoder) {
        size_t bins = info.mel_major ? rows : columns, frames = info.mel_major ? columns : rows;
        if (info.num_mel_bins == 0 || (size_t)info.num_mel_bins != bins ||
            (info.audio_frames && frames != (size_t)info.audio_frames)) {
            if (info.audio_frames)
                fprintf(stderr, "transcribe: %s: the model takes %d mel bins x %d frames, the feature extractor "
                        "(preprocessor_config.json) gives %zu x %zu\n", dir, info.num_mel_bins, info.audio_frames,
                        bins, frames);
            else
                fprintf(stderr, "transcribe: %s: the model takes %d mel bins a frame, the feature extractor "
                        "(preprocessor_config.json) gives %zu\n", dir, info.num_mel_bins, bins);
            goto done;
        }
    } else if (audio.kind != PF_AUDIO_WAVEFORM) {
        fprintf(stderr, "transcribe: %s: the feature extractor is not Wav2Vec2's (raw waveforms)\n", dir);
        goto done;
    }
    if (!(features = (float *)malloc(rows * columns * sizeof(float)))) {
        r = PF_ERROR_OUT_OF_MEMORY;
        snprintf(error, sizeof error, "%zu x %zu features", rows, columns);
    } else {
        r = pf_audio_features(processor, samples, (size_t)num_samples, features, rows * columns, error, sizeof error);
    }
    if (r) {
        fprintf(stderr, "transcribe: %s: %s\n", pf_result_string(r), error);
        goto done;
    }
    const float *waves[1] = {features};
    if (info.is_encoder_decoder) { /* features into the encoder, text out of the decoder */
        count = (int)(info.mel_major ? columns : rows); /* frames */
        if (!pf_model_tokenizer(model)) { /* before the prompt: --language reads its tokens */
            fprintf(stderr, "transcribe: %s has no tokenizer to turn the generated ids into text\n", dir);
            goto done;
        }
        pf_generate_options o = pf_model_generate_options(model);
        if (max_new_tokens) o.max_new_tokens = max_new_tokens;
        if (timestamps) o.return_timestamps = 1;
        /* Whisper's timestamp tokens follow <|notimestamps|> */
        int32_t untimed = pf_tokenizer_token_id(pf_model_tokenizer(model), "<|notimestamps|>");
        if (o.return_timestamps && untimed < 0) {
            fprintf(stderr, "transcribe: %s has no <|notimestamps|> token: no timestamps to print\n", dir);
            goto done;
        }
        int32_t prompt[4];
        if (language) { /* Whisper's prompt: <|startoftranscript|> <|xx|> <|task|> <|notimestamps|> */
            char token[32];
            pf_tokenizer *tokenizer = pf_model_tokenizer(model);
            snprintf(token, sizeof token, "<|%s|>", language);
            prompt[0] = info.decoder_start_token_id;
            prompt[1] = pf_tokenizer_token_id(tokenizer, token);
            snprintf(token, sizeof token, "<|%s|>", task ? task : "transcribe");
            prompt[2] = pf_tokenizer_token_id(tokenizer, token);
            prompt[3] = pf_tokenizer_token_id(tokenizer, "<|notimestamps|>");
            if (prompt[0] < 0 || prompt[1] < 0 || prompt[2] < 0 || prompt[3] < 0) {
                fprintf(stderr, "transcribe: %s has no <|%s|> language token, or not Whisper's task tokens\n", dir, language);
                goto done;
            }
            o.decoder_prompt = prompt;
            o.decoder_prompt_length = o.return_timestamps ? 3 : 4; /* timestamps: without <|notimestamps|> */
        }
        if ((r = pf_generate_audio(model, waves, &count, 1, &o, &generation)) ||
            (r = decode_text(model, &generation, untimed >= 0 ? untimed + 1 : 0, timestamps, &text))) {
            fprintf(stderr, "transcribe: %s: %s\n", pf_result_string(r), pf_error_message(model));
            goto done;
        }
    } else {
        if (timestamps) {
            fprintf(stderr, "transcribe: --timestamps needs a Whisper model\n");
            goto done;
        }
        count = (int)(rows * columns); /* a waveform's features: 1 x num_samples */
        if ((r = pf_encode_audio(model, waves, &count, 1, &e)) || (r = pf_ctc_decode(model, e, 0, &text))) {
            fprintf(stderr, "transcribe: %s: %s\n", pf_result_string(r), pf_error_message(model));
            goto done;
        }
    }
    printf("%s\n", text);
    status = 0;
done:
    pf_string_free(text);
    pf_generation_free(&generation);
    pf_encoding_free(e);
    pf_free(model);
    pf_audio_processor_free(processor);
    free(features);
    free(samples);
    return status;
}
