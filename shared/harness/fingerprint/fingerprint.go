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
		buf = appendRow(buf[:0], cols, names, i)
		f.addHash(xxh3.Hash128(buf))
	}
}

// appendRow appends the canonical rendering of row i: every column as
// name=quoted value (or a null marker), in column order.
func appendRow(buf []byte, cols []arrow.Array, names []arrow.Field, i int) []byte {
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
	return buf
}

func (f *Fingerprint) addHash(h xxh3.Uint128) {
	lo := f.Lo + h.Lo
	carry := uint64(0)
	if lo < f.Lo {
		carry = 1
	}
	f.Lo = lo
	f.Hi += h.Hi + carry
	f.Rows++
}

// Add adds every row of rec to the fingerprint, exactly as Scan does for
// the records a scan produces, so a fingerprint built from records made
// elsewhere (a model of the expected rows) compares equal to a scan's.
func (f *Fingerprint) Add(rec arrow.RecordBatch) { f.add(rec) }

// Records fingerprints the rows of the given records.
func Records(recs ...arrow.RecordBatch) Fingerprint {
	var f Fingerprint
	for _, rec := range recs {
		f.add(rec)
	}
	return f
}

// Rows returns the canonical rendering of every row of rec, the text each
// row's hash is computed from (column names, values and null markers, with
// unit separators; not meant for display as is), so two sets of rows whose
// fingerprints differ can be compared row by row.
func Rows(rec arrow.RecordBatch) []string {
	cols := rec.Columns()
	names := rec.Schema().Fields()
	out := make([]string, rec.NumRows())
	buf := make([]byte, 0, 256)
	for i := range out {
		buf = appendRow(buf[:0], cols, names, i)
		out[i] = string(buf)
	}
	return out
}

// Display renders a canonical row from Rows readably: "name=value, ...",
// with null for nulls.
func Display(row string) string {
	var b []byte
	for i := 0; i < len(row); i++ {
		switch c := row[i]; {
		case c == 0x1f:
			if i < len(row)-1 {
				b = append(b, ", "...)
			}
		case c == 0xff && i+1 < len(row) && row[i+1] == 0xfe:
			b = append(b, "null"...)
			i++
		default:
			b = append(b, c)
		}
	}
	return string(b)
}
