package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4/fb"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/proto"
)

// Badger v4 lays a table (.sst) out as
//
//	block 0 | block 1 | … | index | index len (u32) | checksum (pb) | checksum len (u32)
//
// where the index is a flatbuffer (fb.TableIndex) listing every block's
// offset and length, covered by the trailing checksum. Each block, after
// decompression, ends in
//
//	entries | entry offsets (u32 each) | entry count (u32) | checksum (pb) | checksum len (u32)
//
// with its checksum covering everything up to and including the entry
// count. All integers are big-endian. verifyTable checks what badger's
// table.OpenTable reads (the index, its checksum, a first block offset) and
// what badger only checks on demand (every block's checksum), with bounds
// checks where badger slices blindly: badger panics on a bad trailer and
// serves garbage from a block whose checksum it never looked at.

// verifyTable checks one table image and returns the newest version it
// holds. It never panics.
func verifyTable(data []byte, compression options.CompressionType) (maxVersion uint64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("table does not parse: %v", r)
		}
	}()
	indexStart, index, err := tableIndex(data)
	if err != nil {
		return 0, err
	}
	n := index.OffsetsLength()
	if n == 0 {
		return 0, errors.New("index lists no blocks")
	}
	var bo fb.BlockOffset
	var scratch []byte // one decompression buffer for all blocks
	for i := range n {
		if !index.Offsets(&bo, i) {
			return 0, fmt.Errorf("index entry %d of %d unreadable", i, n)
		}
		off, size := int(bo.Offset()), int(bo.Len())
		if off < 0 || size <= 0 || off+size > indexStart {
			return 0, fmt.Errorf("block %d at %d+%d lies outside the %d bytes of blocks", i, off, size, indexStart)
		}
		if err := verifyBlock(data[off:off+size], compression, &scratch); err != nil {
			return 0, fmt.Errorf("block %d at offset %d: %w", i, off, err)
		}
	}
	return index.MaxVersion(), nil
}

// tableIndex reads and checks the footer and index of a table image.
func tableIndex(data []byte) (indexStart int, index *fb.TableIndex, err error) {
	pos := len(data)
	chk, pos, err := trailer(data, pos, "table")
	if err != nil {
		return 0, nil, err
	}
	if pos < 4 {
		return 0, nil, errors.New("no room for the index length")
	}
	indexLen := int(binary.BigEndian.Uint32(data[pos-4 : pos]))
	pos -= 4
	if indexLen <= 0 || indexLen > pos {
		return 0, nil, fmt.Errorf("index length %d does not fit in %d bytes", indexLen, pos)
	}
	indexStart = pos - indexLen
	indexData := data[indexStart:pos]
	if err := checkSum(indexData, chk); err != nil {
		return 0, nil, fmt.Errorf("index: %w", err)
	}
	return indexStart, fb.GetRootAsTableIndex(indexData, 0), nil
}

// trailer reads the "checksum (pb) | checksum len (u32)" that ends data[:pos]
// and returns the checksum and the position before it.
func trailer(data []byte, pos int, what string) (*pb.Checksum, int, error) {
	if pos < 4 || pos > len(data) {
		return nil, 0, fmt.Errorf("%s of %d bytes is too short for a checksum", what, pos)
	}
	chkLen := int(binary.BigEndian.Uint32(data[pos-4 : pos]))
	pos -= 4
	if chkLen <= 0 || chkLen > pos {
		return nil, 0, fmt.Errorf("%s checksum length %d does not fit in %d bytes", what, chkLen, pos)
	}
	chk := &pb.Checksum{}
	if err := proto.Unmarshal(data[pos-chkLen:pos], chk); err != nil {
		return nil, 0, fmt.Errorf("%s checksum does not decode: %w", what, err)
	}
	return chk, pos - chkLen, nil
}

// checkSum compares data with a stored checksum. Badger's own
// y.VerifyChecksum panics on an unknown algorithm.
func checkSum(data []byte, chk *pb.Checksum) error {
	switch chk.Algo {
	case pb.Checksum_CRC32C, pb.Checksum_XXHash64:
	default:
		return fmt.Errorf("unknown checksum algorithm %d", chk.Algo)
	}
	if got := y.CalculateChecksum(data, chk.Algo); got != chk.Sum {
		return fmt.Errorf("checksum mismatch (stored %d, computed %d)", chk.Sum, got)
	}
	return nil
}

// verifyBlock decompresses one block as badger does and checks its checksum
// and entry table.
func verifyBlock(raw []byte, compression options.CompressionType, scratch *[]byte) error {
	data, err := decompressBlock(raw, compression, scratch)
	if err != nil {
		return err
	}
	chk, pos, err := trailer(data, len(data), "block")
	if err != nil {
		return err
	}
	if pos < 4 {
		return errors.New("no room for the entry count")
	}
	entries := int(binary.BigEndian.Uint32(data[pos-4 : pos]))
	if entries <= 0 || entries > (pos-4)/4 {
		return fmt.Errorf("entry count %d does not fit in %d bytes", entries, pos-4)
	}
	return checkSum(data[:pos], chk)
}

// maxBlockBytes bounds a decompressed block: badger's blocks are 4 KiB by
// default, far over that only for a single huge entry, and a table is at
// most tens of MiB.
const maxBlockBytes = 64 << 20

func decompressBlock(raw []byte, compression options.CompressionType, scratch *[]byte) ([]byte, error) {
	switch compression {
	case options.None:
		return raw, nil
	case options.Snappy:
		n, err := snappy.DecodedLen(raw)
		if err != nil {
			return nil, fmt.Errorf("snappy: %w", err)
		}
		if n > maxBlockBytes {
			return nil, fmt.Errorf("snappy block claims %d bytes", n)
		}
		if cap(*scratch) < n {
			*scratch = make([]byte, n)
		}
		out, err := snappy.Decode((*scratch)[:n], raw)
		if err != nil {
			return nil, fmt.Errorf("snappy: %w", err)
		}
		return out, nil
	case options.ZSTD:
		out, err := y.ZSTDDecompress((*scratch)[:0], raw)
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unknown compression %d", compression)
	}
}

// guessCompression finds the compression a table's blocks verify under,
// for salvage when the MANIFEST that records it is unreadable.
func guessCompression(data []byte) (options.CompressionType, error) {
	var first error
	for _, c := range []options.CompressionType{options.Snappy, options.None, options.ZSTD} {
		if _, err := verifyTable(data, c); err == nil {
			return c, nil
		} else if first == nil {
			first = err
		}
	}
	return 0, first
}
