// Package fingerprint computes an order-independent fingerprint of every
// live row of a table: the oracle for "no row lost, duplicated or
// resurrected". Two scans have the same fingerprint exactly when they
// produce the same multiset of rows (up to a 128-bit hash collision): each
// row is hashed from a canonical rendering of all its columns, and the
// hashes are summed, so order does not matter but a duplicate, a missing or
// an extra row changes the sum.
package fingerprint

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"
	"github.com/zeebo/xxh3"
)

// Fingerprint summarizes a multiset of rows.
type Fingerprint struct {
	Rows int64
	Lo   uint64
	Hi   uint64
}

// String renders the fingerprint compactly.
func (f Fingerprint) String() string {
	return fmt.Sprintf("%d rows/%016x%016x", f.Rows, f.Hi, f.Lo)
}

// Table fingerprints the live rows of the table's current snapshot.
func Table(ctx context.Context, tbl *table.Table) (Fingerprint, error) {
	return Scan(ctx, tbl.Scan())
}

// Scan fingerprints the rows a scan produces.
func Scan(ctx context.Context, scan *table.Scan) (Fingerprint, error) {
	var f Fingerprint
	_, records, err := scan.ToArrowRecords(ctx)
	if err != nil {
		return f, fmt.Errorf("fingerprint: scan: %w", err)
	}
	for rec, err := range records {
		if err != nil {
			return f, fmt.Errorf("fingerprint: read: %w", err)
		}
		f.add(rec)
		rec.Release()
	}
	return f, nil
}

func (f *Fingerprint) add(rec arrow.RecordBatch) {
	buf := make([]byte, 0, 256)
	cols := rec.Columns()
	names := rec.Schema().Fields()
	for i := 0; i < int(rec.NumRows()); i++ {
		buf = buf[:0]
		for c, col := range cols {
			buf = append(buf, names[c].Name...)
			buf = append(buf, '=')
			if col.IsNull(i) {
				buf = append(buf, 0xff, 0xfe)
			} else {
				buf = strconv.AppendQuote(buf, col.ValueStr(i))
			}
			buf = append(buf, 0x1f)
		}
		h := xxh3.Hash128(buf)
		lo := f.Lo + h.Lo
		carry := uint64(0)
		if lo < f.Lo {
			carry = 1
		}
		f.Lo = lo
		f.Hi += h.Hi + carry
		f.Rows++
	}
}
