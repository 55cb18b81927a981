/*
 * wddm_fence_runtime.c: the few helpers a freestanding driver needs (no libc): the mem* functions the
 * compiler may call, a printf subset for messages, a bump allocator over the driver's pool, and the
 * error report's helpers (wddm_fence_driver.h declares each). build.sh links it into every driver.
 */
#include "wddm_fence_driver.h"

void *memset(void *destination, int value, size_t bytes) {
  BYTE *d = destination;
  while (bytes--) *d++ = (BYTE)value;
  return destination;
}

void *memcpy(void *destination, const void *source, size_t bytes) {
  BYTE *d = destination;
  const BYTE *s = source;
  while (bytes--) *d++ = *s++;
  return destination;
}

void *memmove(void *destination, const void *source, size_t bytes) {
  BYTE *d = destination;
  const BYTE *s = source;
  if (d < s) { while (bytes--) *d++ = *s++; }
  else { d += bytes; s += bytes; while (bytes--) *--d = *--s; }
  return destination;
}

int memcmp(const void *a, const void *b, size_t bytes) {
  const BYTE *x = a, *y = b;
  for (; bytes; bytes--, x++, y++) if (*x != *y) return *x < *y ? -1 : 1;
  return 0;
}

size_t strlen(const char *text) {
  size_t n = 0;
  while (text[n]) n++;
  return n;
}

/* ───────────────────────────── WddmFormat: printf's subset ───────────────────────────── */

typedef struct { char *at; char *end; int length; } Sink;

static void put(Sink *sink, char c) {
  if (sink->at < sink->end) *sink->at++ = c;
  sink->length++;
}

static void putNumber(Sink *sink, UINT64 value, UINT base, int upper, int negative) {
  char digits[24];
  int n = 0;
  const char *set = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  do { digits[n++] = set[value % base]; value /= base; } while (value);
  if (negative) put(sink, '-');
  while (n) put(sink, digits[--n]);
}

int WddmFormatV(char *buffer, size_t size, const char *format, va_list args) {
  Sink sink = { buffer, buffer + (size ? size - 1 : 0), 0 };
  for (const char *f = format; *f; f++) {
    if (*f != '%') { put(&sink, *f); continue; }
    f++;
    int longs = 0;
    while (*f == 'l') { longs++; f++; }
    switch (*f) {
      case 's': { const char *s = va_arg(args, const char *); for (; s && *s; s++) put(&sink, *s); break; }
      case 'c': put(&sink, (char)va_arg(args, int)); break;
      case 'd': {
        int64_t v = longs >= 2 ? va_arg(args, long long) : longs ? va_arg(args, long) : va_arg(args, int);
        putNumber(&sink, v < 0 ? (UINT64)0 - (UINT64)v : (UINT64)v, 10, 0, v < 0);
        break;
      }
      case 'u': case 'x': case 'X': {
        UINT64 v = longs >= 2 ? va_arg(args, unsigned long long) : longs ? va_arg(args, unsigned long) : va_arg(args, unsigned);
        putNumber(&sink, v, *f == 'u' ? 10 : 16, *f == 'X', 0);
        break;
      }
      case '%': put(&sink, '%'); break;
      case '\0': f--; break;
      default: put(&sink, '%'); put(&sink, *f); break;
    }
  }
  if (size) *sink.at = '\0';
  return sink.length;
}

int WddmFormat(char *buffer, size_t size, const char *format, ...) {
  va_list args;
  va_start(args, format);
  int n = WddmFormatV(buffer, size, format, args);
  va_end(args);
  return n;
}

/* ───────────────────────────── the pool ───────────────────────────── */

static BYTE *poolAt, *poolEnd;

void WddmPoolInitialize(BYTE *base, UINT bytes) {
  poolAt = base;
  poolEnd = base + bytes;
}

void *WddmPoolAllocate(UINT bytes) {
  uintptr_t at = ((uintptr_t)poolAt + 15u) & ~(uintptr_t)15u;
  if (!poolAt || bytes > (uintptr_t)poolEnd - at) return NULL;
  poolAt = (BYTE *)(at + bytes);
  memset((void *)at, 0, bytes);
  return (void *)at;
}

/* ───────────────────────────── the error report ───────────────────────────── */

/* The model copies a report when WddmReportError is called, so one buffer serves every report. */
static char message[512];

NTSTATUS WddmFault(const char *format, ...) {
  va_list args;
  va_start(args, format);
  WddmFormatV(message, sizeof message, format, args);
  va_end(args);
  WDDM_ERROR_INFO info = { .Kind = WDDM_ERROR_FAULT, .Status = STATUS_DRIVER_INTERNAL_ERROR, .Message = message };
  WddmReportError(&info);
  return STATUS_DRIVER_INTERNAL_ERROR;
}

NTSTATUS WddmRefuse(NTSTATUS status, const char *parameter, const UINT64 *value, const char *expected, const char *format, ...) {
  va_list args;
  va_start(args, format);
  WddmFormatV(message, sizeof message, format, args);
  va_end(args);
  WDDM_ERROR_INFO info = { .Kind = WDDM_ERROR_REFUSAL, .Status = status, .Message = message, .Parameter = parameter, .Expected = expected };
  if (value) { info.HasValue = TRUE; info.Value = *value; }
  WddmReportError(&info);
  return status;
}

NTSTATUS WddmGpuFailure(int32_t gpuStatus, const char *what) {
  WDDM_ERROR_INFO info = { .Kind = WDDM_ERROR_GPU_STATUS, .Status = STATUS_INVALID_PARAMETER, .GpuStatus = gpuStatus, .Message = what };
  WddmReportError(&info);
  return STATUS_INVALID_PARAMETER;
}
