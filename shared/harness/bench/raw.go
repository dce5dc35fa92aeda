package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// RawResult is what the physical-limit rewrite did.
type RawResult struct {
	FilesIn  int   `json:"files_in"`
	BytesIn  int64 `json:"bytes_in"`
	Rows     int64 `json:"rows"`
	FilesOut int   `json:"files_out"`
	BytesOut int64 `json:"bytes_out"`
}

// writerProperties are iceberg-go's Parquet writer defaults (v0.7.0,
// table/internal/parquet_files.go): zstd at the default level, 1 MiB pages
// of at most 20,000 rows, data page v2, dictionaries on with a 2 MiB limit,
// row groups of at most 1,048,576 rows, decimals as INT32 or INT64 up to
// 18 digits (icekeeper's patch of iceberg-go, as Iceberg Java stores them;
// third_party/iceberg-go/ICEKEEPER.md), and (see RawRewrite) a new row
// group once 128 MiB were written, read back with iceberg-go's reader
// settings (parallel column decoding, batches of 131,072 rows).
func writerProperties() *parquet.WriterProperties {
	return parquet.NewWriterProperties(
		parquet.WithMaxRowGroupLength(1048576),
		parquet.WithDataPageSize(1024*1024),
		parquet.WithDataPageVersion(parquet.DataPageV2),
		parquet.WithBatchSize(20000),
		parquet.WithDictionaryPageSizeLimit(2*1024*1024),
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithDictionaryDefault(true),
		parquet.WithStats(true),
		parquet.WithStoreDecimalAsInteger(true),
	)
}

// RawRewrite reads the Parquet files with arrow-go and writes their rows to
// new files of about target bytes in outDir, with iceberg-go's writer
// settings and no Iceberg at all: no manifests, no deletes, no catalog. It
// is the physical limit of a rewrite on this machine.
func RawRewrite(ctx context.Context, paths []string, outDir string, target int64) (RawResult, error) {
	var res RawResult
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return res, err
	}
	var (
		w   *pqarrow.FileWriter
		out *countingWriter
	)
	closeOut := func() error {
		if w == nil {
			return nil
		}
		if err := w.Close(); err != nil {
			return err
		}
		res.BytesOut += out.n
		w, out = nil, nil
		return nil
	}
	for _, p := range paths {
		// file:///abs (iceberg-go) or file:/abs (Iceberg Java, Spark).
		p = strings.TrimPrefix(strings.TrimPrefix(p, "file://"), "file:")
		st, err := os.Stat(p)
		if err != nil {
			return res, err
		}
		res.FilesIn++
		res.BytesIn += st.Size()
		pf, err := file.OpenParquetFile(p, false)
		if err != nil {
			return res, fmt.Errorf("open %s: %w", p, err)
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: true, BatchSize: 1 << 17}, memory.DefaultAllocator)
		if err != nil {
			pf.Close()
			return res, err
		}
		rr, err := fr.GetRecordReader(ctx, nil, nil)
		if err != nil {
			pf.Close()
			return res, err
		}
		for rr.Next() {
			rec := rr.RecordBatch()
			if w == nil {
				f, err := os.Create(filepath.Join(outDir, fmt.Sprintf("raw-%05d.parquet", res.FilesOut)))
				if err != nil {
					return res, err
				}
				out = &countingWriter{w: f}
				if w, err = pqarrow.NewFileWriter(rec.Schema(), out, writerProperties(), pqarrow.DefaultWriterProps()); err != nil {
					return res, err
				}
				res.FilesOut++
			}
			if w.RowGroupTotalBytesWritten() >= rowGroupBytes {
				w.NewBufferedRowGroup()
			}
			if err := w.WriteBuffered(rec); err != nil {
				return res, err
			}
			res.Rows += rec.NumRows()
			if out.n+w.RowGroupTotalCompressedBytes() >= target {
				if err := closeOut(); err != nil {
					return res, err
				}
			}
		}
		err = rr.Err()
		rr.Release()
		pf.Close()
		if err != nil && err != io.EOF {
			return res, fmt.Errorf("read %s: %w", p, err)
		}
	}
	return res, closeOut()
}

// rowGroupBytes is iceberg-go's write.parquet.row-group-size-bytes default.
const rowGroupBytes = 128 << 20

// countingWriter counts the bytes written through it; Close closes what
// it writes to, when that closes.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) Close() error {
	if cl, ok := c.w.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}
