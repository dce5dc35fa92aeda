package rewrite

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/bounds"
	"github.com/icekeeper/icekeeper/shared/exchange"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/pin"
	"github.com/icekeeper/icekeeper/shared/sortrows"
	"github.com/icekeeper/icekeeper/shared/zorder"
)

// sendExchangeReady asks the committer to start exchange x's reduces if
// every one of its maps is done (several maps may ask; the committer's
// answer is the same each time).
func (r *Rewriter) sendExchangeReady(ctx context.Context, jobID string, x *messages.Exchange) (bool, error) {
	job, err := r.jobs.Get(ctx, jobID)
	if err != nil {
		return false, err
	}
	if job.State != jobs.Planned && job.State != jobs.Running {
		return false, nil
	}
	for _, m := range x.Maps {
		if !slices.Contains(job.DoneGroups, m) {
			return false, nil
		}
	}
	body, err := messages.Encode(messages.ExchangeReady(jobID, x.ID))
	if err != nil {
		return false, err
	}
	if err := r.commits.Send(ctx, string(body)); err != nil {
		return false, err
	}
	return true, nil
}

// reduce writes one key range of a two-stage sort: the rows of every
// map's pages in that range, merged in sort order, into the table's new
// files (package exchange).
func (r *Rewriter) reduce(ctx context.Context, task messages.Task, attempt string) ([]iceberg.DataFile, measured, *table.Table, error) {
	start := r.now()
	var m measured
	x := task.Exchange
	ident, err := messages.TableIdent(task.Table)
	if err != nil {
		return nil, m, nil, fmt.Errorf("%w: %w", ErrTerminal, err)
	}
	if _, err := outputs.RunID(attempt, 0); err != nil {
		return nil, m, nil, fmt.Errorf("%w: %w", ErrTerminal, err)
	}
	if task.SortOrderID == nil && len(task.ZOrderFieldIDs) == 0 {
		return nil, m, nil, fmt.Errorf("%w: group %d: an exchange's reduce without a sort order or z-order", ErrTerminal, task.Group)
	}
	tbl, err := r.tables.Open(ctx, ident, task.Pin)
	if err != nil {
		if errors.Is(err, pin.ErrMismatch) {
			err = fmt.Errorf("%w: %w", ErrTerminal, err)
		}
		return nil, m, nil, err
	}
	indexes := make([]messages.ExchangeIndex, 0, len(x.MapDescriptors))
	for _, key := range x.MapDescriptors {
		data, err := r.blobs.Get(ctx, key)
		if err != nil {
			return nil, m, tbl, fmt.Errorf("group %d: read map descriptor %s: %w", task.Group, key, err)
		}
		var d messages.Descriptor
		if err := messages.Decode(data, &d); err != nil {
			return nil, m, tbl, fmt.Errorf("%w: group %d: %w", ErrTerminal, task.Group, err)
		}
		if d.JobID != task.JobID || d.Exchange == nil || d.Exchange.ID != x.ID || !slices.Contains(x.Maps, d.Group) {
			return nil, m, tbl, fmt.Errorf("%w: group %d: %s is not a map of exchange %d of job %s", ErrTerminal, task.Group, key, x.ID, task.JobID)
		}
		indexes = append(indexes, d.Exchange.Index)
	}
	schema := tbl.Schema()
	m.SchemaID = schema.ID
	writeOpts := []table.WriteRecordOption{table.WithRecordBatchBufferSize(WriteBufferBatches)}
	if task.TargetFileSize > 0 {
		writeOpts = append(writeOpts, table.WithTargetFileSize(task.TargetFileSize))
	}
	if x.RowLineage {
		schema = iceberg.SchemaWithRowLineage(schema)
		writeOpts = append(writeOpts, table.WithPreserveRowLineage(schema))
	}
	arrowSchema, err := table.SchemaToArrowSchemaWithOptions(schema, table.ArrowSchemaOptions{IncludeFieldIDs: true, TableProperties: tbl.Properties()})
	if err != nil {
		return nil, m, tbl, fmt.Errorf("%w: write schema: %w", ErrTerminal, err)
	}
	var keys []sortrows.Key
	var keyType arrow.DataType
	if task.SortOrderID != nil {
		if keys, err = sortKeys(tbl.Metadata(), *task.SortOrderID, schema, arrowSchema); err != nil {
			return nil, m, tbl, fmt.Errorf("%w: group %d: %w", ErrTerminal, task.Group, err)
		}
		keyType = arrowSchema.Field(keys[0].Column).Type
	} else {
		// A z-order's pages carry the z-value as a last column.
		keys = []sortrows.Key{{Column: arrowSchema.NumFields()}}
		keyType = &arrow.FixedSizeBinaryType{ByteWidth: 8 * len(task.ZOrderFieldIDs)}
	}
	ranges, err := exchange.DecodeRanges(x.Boundaries, keys[0], keyType)
	if err != nil {
		return nil, m, tbl, fmt.Errorf("%w: group %d: %w", ErrTerminal, task.Group, err)
	}
	out, err := writeTable(tbl, task.OutputSpec(), task.SpecID)
	if err != nil {
		return nil, m, tbl, fmt.Errorf("%w: %w", ErrTerminal, err)
	}
	var merged sortrows.Stats
	records := exchange.Read(ctx, r.blobs, indexes, ranges, x.Range, keys, sortrows.Options{BatchRows: ArrowBatchRows, Stats: &merged})
	if task.SortOrderID == nil {
		// The writer must not re-sort by the table's order, and gets the
		// rows without the z-value.
		if out.tbl, err = withoutSortOrder(out.tbl); err != nil {
			return nil, m, tbl, fmt.Errorf("%w: group %d: z-order: %w", ErrTerminal, task.Group, err)
		}
		records = zorder.Drop(records)
	}
	records = counting(records, &m.RowsScanned)
	written, err := r.writeRows(ctx, out, arrowSchema, records, attempt, writeOpts, task.Group, &m)
	if err != nil {
		return written, m, tbl, err
	}
	if m.RowsWritten != m.RowsScanned {
		return written, m, tbl, fmt.Errorf("%w: group %d: wrote %d rows but read %d from the exchange", ErrTerminal, task.Group, m.RowsWritten, m.RowsScanned)
	}
	m.SortRuns = merged.Runs
	m.DurationMillis = r.now().Sub(start).Milliseconds()
	return written, m, tbl, nil
}

// exchangeNorms are a z-order exchange's norms, from the run's bounds the
// planner put in the task.
func exchangeNorms(schema *iceberg.Schema, x *messages.Exchange) []zorder.Norm {
	norms := make([]zorder.Norm, len(x.ZOrderFieldIDs))
	for i, id := range x.ZOrderFieldIDs {
		f, ok := schema.FindFieldByID(id)
		k := bounds.KindOf(f.Type)
		if !ok || k == 0 || i >= len(x.ZOrderLower) || i >= len(x.ZOrderUpper) || x.ZOrderLower[i] == nil || x.ZOrderUpper[i] == nil {
			continue
		}
		lo, ok1 := bounds.Decode(k, f.Type, x.ZOrderLower[i])
		hi, ok2 := bounds.Decode(k, f.Type, x.ZOrderUpper[i])
		if ok1 && ok2 {
			norms[i], _ = zorder.NormFor(k, lo, hi)
		}
	}
	return norms
}
