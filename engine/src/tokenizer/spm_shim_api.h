// The C ABI of the lorascope_spm module (spm_shim.cpp). The core library dlopen()s the module so that
// libsentencepiece's bundled protobuf never shares a symbol namespace with libtorch's.
#pragma once

#include <cstddef>

#define LORASCOPE_SPM_ABI_VERSION 1

extern "C" {
typedef struct lorascope_spm lorascope_spm;

int lorascope_spm_abi_version(void);
// Returns null and writes a message into err (NUL-terminated, at most err_size bytes) on failure.
lorascope_spm* lorascope_spm_load(const char* model_path, char* err, size_t err_size);
void lorascope_spm_free(lorascope_spm* model);
int lorascope_spm_piece_size(const lorascope_spm* model);
// Writes up to capacity ids into out and returns how many the text needs (call again with more
// room if that exceeds capacity); -1 on failure.
long lorascope_spm_encode(const lorascope_spm* model, const char* text, size_t text_size, int* out, size_t capacity);
// The piece of an id; valid until the model is freed. Empty for ids out of range.
const char* lorascope_spm_id_to_piece(const lorascope_spm* model, int id);
// 1 for control pieces (<s>, </s>, <pad>), 2 for the unknown piece, 3 for unused, 4 for byte pieces, else 0.
int lorascope_spm_piece_type(const lorascope_spm* model, int id);
int lorascope_spm_unk_id(const lorascope_spm* model);
}

typedef int (*lorascope_spm_abi_version_fn)(void);
typedef lorascope_spm* (*lorascope_spm_load_fn)(const char*, char*, size_t);
typedef void (*lorascope_spm_free_fn)(lorascope_spm*);
typedef int (*lorascope_spm_piece_size_fn)(const lorascope_spm*);
typedef long (*lorascope_spm_encode_fn)(const lorascope_spm*, const char*, size_t, int*, size_t);
typedef const char* (*lorascope_spm_id_to_piece_fn)(const lorascope_spm*, int);
typedef int (*lorascope_spm_piece_type_fn)(const lorascope_spm*, int);
typedef int (*lorascope_spm_unk_id_fn)(const lorascope_spm*);
