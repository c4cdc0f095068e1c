package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/y"
)

// A memtable log (.mem) is badger's write-ahead log: a 20-byte header
// (encryption key ID, IV), then entries
//
//	meta (1) | user meta (1) | key len, value len, expiry (uvarints) | key | value | crc32c (u32, big-endian)
//
// with the checksum over everything before it, and zeros after the last
// entry (the file is created at twice the memtable size). Entries of a
// transaction carry bitTxn and end with a bitFinTxn entry. On open badger
// replays entries up to the first that does not verify and truncates the
// file there: right for a torn tail (a write cut short is followed only by
// zeros), silent loss of every later synced write when the damage sits in
// the middle. checkMemLog tells the two apart.

const (
	entryBitTxn    = 1 << 6 // badger value.go bitTxn
	entryBitFinTxn = 1 << 7 // badger value.go bitFinTxn
	maxEntryKey    = 1 << 16
)

// memLogCheck is what checkMemLog found.
type memLogCheck struct {
	// validEnd is where badger's replay will truncate the log.
	validEnd int
	// reason is set when the log is damaged before its tail.
	reason string
}

// checkMemLog walks a memtable log image as badger's replay does.
func checkMemLog(data []byte) memLogCheck {
	if len(data) < logHeaderSize {
		// Badger creates a log at full size before writing its header, so
		// a short one was cut by damage; badger would start it afresh.
		return memLogCheck{reason: fmt.Sprintf("%d bytes, shorter than its %d-byte header", len(data), logHeaderSize)}
	}
	if key := binary.BigEndian.Uint64(data[:8]); key != 0 {
		return memLogCheck{reason: fmt.Sprintf("header names encryption key %d; this store is never encrypted", key)}
	}
	pos, validEnd := logHeaderSize, logHeaderSize
	inTxn := false
	for {
		n, key, meta, ok := decodeLogEntry(data[pos:])
		if !ok && pos+n >= len(data) && data[len(data)-1] != 0 {
			// Logs are created at full size, so a crash leaves zeros at
			// the end; an entry running into the file's end means the
			// file was cut.
			return memLogCheck{validEnd: validEnd, reason: fmt.Sprintf("file ends inside the entry at offset %d (it was cut)", pos)}
		}
		if !ok {
			// A write cut short leaves a prefix of one entry and zeros
			// after it; bytes further on are entries badger would drop.
			if later := nonZeroAfter(data, pos+n); later >= 0 {
				return memLogCheck{validEnd: validEnd, reason: fmt.Sprintf(
					"entry at offset %d is damaged but data follows at offset %d (badger would drop every write after the damage)", pos, later)}
			}
			return memLogCheck{validEnd: validEnd}
		}
		if key == 0 {
			return memLogCheck{validEnd: validEnd} // zeros: the end
		}
		pos += n
		switch {
		case meta&entryBitTxn != 0:
			inTxn = true
		case meta&entryBitFinTxn != 0:
			inTxn = false
			validEnd = pos
		case !inTxn:
			validEnd = pos
		}
	}
}

// decodeLogEntry decodes the entry at the start of b and returns its
// length and key length. For an entry that does not verify, n is how far
// it reaches: its claimed length, the end of b for an entry the end cuts
// (a torn tail), its header for a header no writer makes.
func decodeLogEntry(b []byte) (n, keyLen int, meta byte, ok bool) {
	if len(b) < 2 {
		return len(b), 0, 0, false
	}
	meta = b[0]
	h := 2
	var lens [3]uint64
	for i := range lens {
		v, c := binary.Uvarint(b[h:])
		if c == 0 {
			return len(b), 0, 0, false
		}
		if c < 0 {
			return h, 0, 0, false
		}
		lens[i], h = v, h+c
	}
	klen, vlen := lens[0], lens[1]
	if klen == 0 && vlen == 0 && meta == 0 && b[1] == 0 {
		return h, 0, 0, true
	}
	if klen > maxEntryKey {
		return h, 0, 0, false
	}
	if vlen > uint64(len(b)) || uint64(h)+klen+vlen+4 > uint64(len(b)) {
		return len(b), 0, 0, false
	}
	end := h + int(klen) + int(vlen)
	if crc32.Checksum(b[:end], y.CastagnoliCrcTable) != binary.BigEndian.Uint32(b[end:end+4]) {
		return end + 4, 0, 0, false
	}
	return end + 4, int(klen), meta, true
}

// nonZeroAfter returns the offset of the first non-zero byte at or after
// from, or -1.
func nonZeroAfter(data []byte, from int) int {
	for i := max(from, 0); i < len(data); i++ {
		if data[i] != 0 {
			return i
		}
	}
	return -1
}

// checkLogFile checks one .mem (walked) or .vlog (header only: this
// store's values stay in the LSM tree, so value logs hold next to nothing).
func checkLogFile(path string, mem bool) (memLogCheck, error) {
	if !mem {
		return memLogCheck{reason: checkLogHeader(path)}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return memLogCheck{}, err
	}
	return checkMemLog(data), nil
}

// checkKeyRegistry reads KEYREGISTRY with badger's own reader, read-only.
func checkKeyRegistry(dir string) (reason string) {
	defer func() {
		if r := recover(); r != nil {
			reason = fmt.Sprintf("does not parse: %v", r)
		}
	}()
	if _, err := badger.OpenKeyRegistry(badger.KeyRegistryOptions{Dir: dir, ReadOnly: true}); err != nil {
		return err.Error()
	}
	return ""
}
