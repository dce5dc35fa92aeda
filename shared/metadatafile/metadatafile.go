// Package metadatafile reads an Iceberg table metadata file however a
// writer stored it: plain JSON, gzip (Iceberg Java's
// write.metadata.compression-codec=gzip names them *.gz.metadata.json,
// older writers *.metadata.json.gz) or zstd, told apart by the content's
// magic bytes, never by the name, so a file a name would mislead is still
// read. It reads only; a file that cannot be read or parsed is an error.
package metadatafile

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/klauspost/compress/zstd"
)

// Read reads and parses the metadata file at location.
func Read(fsys icebergio.IO, location string) (table.Metadata, error) {
	b, err := Bytes(fsys, location)
	if err != nil {
		return nil, err
	}
	meta, err := table.ParseMetadataBytes(b)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", location, err)
	}
	return meta, nil
}

// maxMetadataBytes bounds what a metadata file is read to (uncompressed).
const maxMetadataBytes = 1 << 30

// Bytes reads a metadata file's JSON, uncompressed by its magic bytes
// (gzip, zstd) whatever its name says.
func Bytes(fsys icebergio.IO, location string) ([]byte, error) {
	f, err := fsys.Open(location)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxMetadataBytes))
	if err != nil {
		return nil, err
	}
	switch {
	case bytes.HasPrefix(raw, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("gunzip %s: %w", location, err)
		}
		defer zr.Close()
		return io.ReadAll(io.LimitReader(zr, maxMetadataBytes))
	case bytes.HasPrefix(raw, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("unzstd %s: %w", location, err)
		}
		defer zr.Close()
		return io.ReadAll(io.LimitReader(zr, maxMetadataBytes))
	}
	return raw, nil
}
