// Package rdb serializes single values in Redis 7.0's RDB object format
// (RDB version 10): the bytes of DUMP payloads, RESTORE, MIGRATE, slot
// images and RDB files.
//
// Writing (AppendValue, AppendPayload, DumpPayload) produces what Redis
// 7.0.15 writes for the same value: strings int-encoded when they are short
// canonical integers, LZF-compressed (Redis's compressor's exact output)
// when longer than 20 bytes and compressible, raw otherwise; lists as
// RDB_TYPE_LIST_QUICKLIST_2 with listpack nodes cut as the list's fill
// cuts them; hashes, sets and sorted sets as their listpack / intset blobs
// when the store holds them compact, else as the plain forms (sorted sets
// with binary scores, RDB_TYPE_ZSET_2); streams as
// RDB_TYPE_STREAM_LISTPACKS_2 with consumer groups, PELs and consumers.
// Where the data alone determines Redis's layout (strings, listpacks,
// intsets, skiplists, lists grown at the tail, streams without deleted
// entries) the bytes are identical to Redis's DUMP (tested against
// redis-server, randomized); hash tables (their iteration order), lists
// grown at the head and streams with tombstones may be laid out
// differently, which every RDB reader accepts.
//
// Reading (DecodePayload, DecodeValue, LoadFile) accepts every non-module type Redis
// 7.0 loads, including the older ziplist, zipmap, intset, quicklist v1 and
// plain encodings, and builds store values directly, choosing the encodings
// the receiving server's thresholds (Limits) give. Every length read from
// the input is bounded by the bytes that remain (or, for LZF, by Limits and
// by the format's maximal expansion) before anything is allocated; corrupt
// input yields ErrBadData or ErrChecksum, never a panic, and is fuzzed. The
// input is never written to (RESTORE's payload is propagated afterwards).
//
// API:
//
//	AppendValue(dst, e) / AppendPayload(dst, e) / DumpPayload(e)
//	    type byte + object; the DUMP payload (+ RDB version + CRC64)
//	VerifyPayload(p), DecodePayload(p, Limits) (Object, error)
//	    RESTORE: ErrChecksum ("version or checksum are wrong") or ErrBadData
//	DecodeValue(b, Limits) (Object, n, error)     one object from a stream
//	NewFileWriter(w, enc, aux...) .Function .SelectDB .Entry .Finish
//	    a whole RDB file (SAVE, BGSAVE, DEBUG RELOAD)
//	LoadFile(data, Limits, fn) / LoadFileWith(data, Limits, FileHandlers)
//	    RDB files of versions 1-10 (start-up load)
//	CRC64(b), Version
//
// Concurrency: the package has no mutable state (the LZF compressor's
// pooled hash tables hold nothing from one call to the next). Encoding reads the entry
// and so must run under the entry's slot lock; decoding touches nothing
// shared and may run anywhere. Any number of goroutines may call any
// function at once.
package rdb
