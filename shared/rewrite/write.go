package rewrite

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/sortrows"
)

// DefaultRepartitionWindowBytes bounds the rows one write run of a group
// that changes partition spec holds (see writeGroup).
const DefaultRepartitionWindowBytes = 128 << 20

// output is where a group's rows go: a table whose default spec is the
// group's output spec, and whether the rows need repartitioning.
type output struct {
	tbl         *table.Table
	repartition bool
}

// writeTable returns the table to write a group's new files with. iceberg-go
// writes in the table's default spec, so for an output spec other than the
// pinned metadata's default the table is rebuilt, in memory only, with that
// spec as its default (nothing is committed; the metadata file is not
// touched). outSpec < 0 means the default spec. inSpec is the spec of the
// group's input files: when the output spec differs, one input partition
// can spread over several output partitions, in any order, so the rows are
// repartitioned.
func writeTable(tbl *table.Table, outSpec, inSpec int) (output, error) {
	meta := tbl.Metadata()
	if outSpec < 0 {
		outSpec = meta.DefaultPartitionSpec()
	}
	out := output{tbl: tbl, repartition: outSpec != inSpec}
	if outSpec == meta.DefaultPartitionSpec() {
		return out, nil
	}
	if meta.PartitionSpecByID(outSpec) == nil {
		return out, fmt.Errorf("output partition spec %d is not in the table's metadata", outSpec)
	}
	b, err := table.MetadataBuilderFromBase(meta, tbl.MetadataLocation())
	if err != nil {
		return out, fmt.Errorf("output spec %d: %w", outSpec, err)
	}
	if err := b.SetDefaultSpecID(outSpec); err != nil {
		return out, fmt.Errorf("output spec %d: %w", outSpec, err)
	}
	withSpec, err := b.Build()
	if err != nil {
		return out, fmt.Errorf("output spec %d: %w", outSpec, err)
	}
	out.tbl = table.New(tbl.Identifier(), withSpec, tbl.MetadataLocation(), tbl.FS, nil)
	return out, nil
}

// withoutSortOrder returns tbl, or, when it has a default sort order, a
// view of it (in memory only, like writeTable's) whose default order is
// unsorted: iceberg-go's writer sorts each batch by the table's default
// order, which would undo an order the rewriter chose (a z-order).
func withoutSortOrder(tbl *table.Table) (*table.Table, error) {
	meta := tbl.Metadata()
	if meta.DefaultSortOrder() == table.UnsortedSortOrderID {
		return tbl, nil
	}
	b, err := table.MetadataBuilderFromBase(meta, tbl.MetadataLocation())
	if err != nil {
		return nil, err
	}
	if err := b.SetDefaultSortOrderID(table.UnsortedSortOrderID); err != nil {
		// No unsorted order in the metadata yet: add one.
		unsorted := table.UnsortedSortOrder
		if err := b.AddSortOrder(&unsorted); err != nil {
			return nil, err
		}
		if err := b.SetDefaultSortOrderID(-1); err != nil {
			return nil, err
		}
	}
	m, err := b.Build()
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), m, tbl.MetadataLocation(), tbl.FS, nil), nil
}

// writeGroup writes the group's rows into data files of out's default spec,
// named with the attempt id.
//
// A group whose rows stay in their spec is one partition of it, so the rows
// arrive clustered and iceberg-go's clustered writer (one open file at a
// time) writes them in one run. A group whose rows move to another spec has
// no such order: an input partition spreads over several output partitions.
// Its rows are cut into windows of at most windowBytes (Arrow size), and
// each window is written by its own fanout write (one open file per output
// partition present in the window, one worker), so memory is bounded by the
// window, not by the number of partitions. Run k names its files with
// outputs.RunID(attempt, k), which keeps the attempt's stem, so the cleanup
// finds every run's files. The price is more, smaller files when rows of
// many output partitions are interleaved across windows.
func writeGroup(ctx context.Context, tbl *table.Table, schema *arrow.Schema, records iter.Seq2[arrow.RecordBatch, error], attempt string, repartition bool, windowBytes int64, opts []table.WriteRecordOption) iter.Seq2[iceberg.DataFile, error] {
	return func(yield func(iceberg.DataFile, error) bool) {
		run0, err := outputs.RunID(attempt, 0)
		if err != nil {
			yield(nil, err)
			return
		}
		if !repartition {
			for df, err := range table.WriteRecords(ctx, tbl, schema, records, append(opts, table.WithClusteredWrite(), table.WithWriteUUID(run0))...) {
				if !yield(df, err) || err != nil {
					return
				}
			}
			return
		}
		if windowBytes <= 0 {
			windowBytes = DefaultRepartitionWindowBytes
		}
		next, stop := iter.Pull2(records)
		defer stop()
		var (
			pending arrow.RecordBatch
			srcErr  error
			done    bool
		)
		pull := func() {
			rec, err, ok := next()
			switch {
			case !ok:
				done = true
			case err != nil:
				srcErr, done = err, true
			default:
				pending = rec
			}
		}
		pull()
		for k := 0; pending != nil; k++ {
			id, err := outputs.RunID(attempt, k)
			if err != nil {
				pending.Release()
				yield(nil, err)
				return
			}
			window := func(yield func(arrow.RecordBatch, error) bool) {
				var size int64
				for pending != nil && (size == 0 || size+sortrows.RecordBytes(pending) <= windowBytes) {
					rec := pending
					pending = nil
					size += sortrows.RecordBytes(rec)
					if !yield(rec, nil) {
						return
					}
					if !done {
						pull()
					}
				}
			}
			for df, err := range table.WriteRecords(ctx, tbl, schema, window, append(opts, table.WithMaxWriteWorkers(1), table.WithWriteUUID(id))...) {
				if err != nil {
					if pending != nil {
						pending.Release()
					}
					yield(nil, err)
					return
				}
				if !yield(df, nil) {
					if pending != nil {
						pending.Release()
					}
					return
				}
			}
		}
		if srcErr != nil {
			yield(nil, srcErr)
		}
	}
}
