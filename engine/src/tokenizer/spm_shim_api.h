// The C ABI of the lorascope_spm module (spm_shim.cpp). The core library dlopen()s the module so that
// libsentencepiece's bundled protobuf never shares a symbol namespace with libtorch's.
// SentencePiece reads and validates spiece.model; encoding follows Hugging Face's pipeline in the
// core library (see unigram_model.h), which SentencePiece's own Encode does not reproduce.
#pragma once

#include <cstddef>

#define LORASCOPE_SPM_ABI_VERSION 2

extern "C" {
typedef struct lorascope_spm lorascope_spm;

int lorascope_spm_abi_version(void);
// Returns null and writes a message into err (NUL-terminated, at most err_size bytes) on failure.
lorascope_spm* lorascope_spm_load(const char* model_path, char* err, size_t err_size);
void lorascope_spm_free(lorascope_spm* model);
int lorascope_spm_piece_size(const lorascope_spm* model);
// The piece of an id; valid until the model is freed. Empty for ids out of range.
const char* lorascope_spm_id_to_piece(const lorascope_spm* model, int id);
float lorascope_spm_score(const lorascope_spm* model, int id);
int lorascope_spm_unk_id(const lorascope_spm* model);
// The model as serialized ModelProto bytes (piece types, normalizer and trainer specs); valid until freed.
const char* lorascope_spm_serialized_model(const lorascope_spm* model, size_t* size);
}

typedef int (*lorascope_spm_abi_version_fn)(void);
typedef lorascope_spm* (*lorascope_spm_load_fn)(const char*, char*, size_t);
typedef void (*lorascope_spm_free_fn)(lorascope_spm*);
typedef int (*lorascope_spm_piece_size_fn)(const lorascope_spm*);
typedef const char* (*lorascope_spm_id_to_piece_fn)(const lorascope_spm*, int);
typedef float (*lorascope_spm_score_fn)(const lorascope_spm*, int);
typedef int (*lorascope_spm_unk_id_fn)(const lorascope_spm*);
typedef const char* (*lorascope_spm_serialized_model_fn)(const lorascope_spm*, size_t*);
