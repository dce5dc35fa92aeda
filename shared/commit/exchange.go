package commit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/exchange"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/sortrows"
)

// startReduces starts exchange id's reduces once every one of its maps is
// done (a two-stage sort, package exchange): it reads the maps' winning
// descriptors, picks the range boundaries from their pages' keys and sends
// one reduce task per range. The maps' winners are settled, so every
// request for the same exchange sends the same tasks; a reduce task that
// arrives twice is a duplicate to the rewriter.
func (c *Committer) startReduces(ctx context.Context, log *slog.Logger, job jobs.Job, ident table.Identifier, term lease.Lease, id int) (Result, error) {
	res := Result{JobID: job.ID, Table: job.Table, Outcome: OutcomeWaiting}
	if job.State != jobs.Planned && job.State != jobs.Running {
		res.Outcome, res.Reason = OutcomeAlready, string(job.State)
		return res, nil
	}
	if c.fanOut == nil {
		return c.abort(ctx, log, job, jobs.Failed, "a two-stage sort needs the task queue to send its reduces", "", messages.FailInvariant)
	}
	if _, err := c.leases.Renew(ctx, term, c.settings.LeaseTTL); err != nil {
		if errors.Is(err, lease.ErrLost) {
			return c.abort(ctx, log, job, jobs.Failed, "lease lost before the exchange's reduces started", "", "")
		}
		return res, err
	}
	plan, groups, err := c.readPlan(ctx, job)
	if err != nil {
		return res, err
	}
	var ex *messages.Exchange
	for _, pg := range plan.Groups {
		if pg.Exchange != nil && pg.Exchange.ID == id {
			ex = pg.Exchange
			break
		}
	}
	if ex == nil || (ex.SortOrderID == nil && len(ex.ZOrderFieldIDs) == 0) {
		return c.abort(ctx, log, job, jobs.Failed, fmt.Sprintf("exchange %d is not in the plan, or has no sort order or z-order", id), "", messages.FailInvariant)
	}
	var indexes []messages.ExchangeIndex
	var keys []string
	lineage := 0
	for _, m := range ex.Maps {
		g := groups[m]
		if g.State != jobs.GroupDone {
			res.Reason = fmt.Sprintf("exchange %d: map group %d is %s", id, m, g.State)
			return res, nil
		}
		d, err := c.readDescriptor(ctx, job, g, plan.Groups[m])
		if err != nil {
			return c.abortOnInvariant(ctx, log, job, res, err)
		}
		if d.Exchange == nil || d.Exchange.ID != id {
			return c.abort(ctx, log, job, jobs.Failed, fmt.Sprintf("map group %d wrote no pages of exchange %d", m, id), "", messages.FailInvariant)
		}
		if d.Exchange.RowLineage {
			lineage++
		}
		indexes = append(indexes, d.Exchange.Index)
		keys = append(keys, g.DescriptorKey)
	}
	if lineage != 0 && lineage != len(ex.Maps) {
		return c.abort(ctx, log, job, jobs.Failed, fmt.Sprintf("exchange %d: %d of %d maps kept row lineage", id, lineage, len(ex.Maps)), "", messages.FailInvariant)
	}
	var key sortrows.Key // a z-value: ascending, never null
	if ex.SortOrderID != nil {
		if key, err = c.firstSortKey(ctx, ident, job, *ex.SortOrderID); err != nil {
			return c.abortOnInvariant(ctx, log, job, res, err)
		}
	}
	boundaries, err := exchange.Boundaries(indexes, key, len(ex.Reduces))
	if err != nil {
		return c.abort(ctx, log, job, jobs.Failed, fmt.Sprintf("exchange %d: %v", id, err), "", messages.FailInvariant)
	}
	var sent []string
	for r, gi := range ex.Reduces {
		if groups[gi].State == jobs.GroupDone {
			continue
		}
		pg := plan.Groups[gi]
		x := *pg.Exchange
		x.Boundaries, x.Range, x.MapDescriptors, x.RowLineage = boundaries, r, keys, lineage > 0
		task := messages.NewGroupTask(job.ID, job.Table, job.Token, job.Pin(), pg)
		task.Group = gi
		task.TargetFileSize, task.SortOrderID, task.ZOrderFieldIDs, task.Exchange = job.TargetFileSize, ex.SortOrderID, ex.ZOrderFieldIDs, &x
		body, err := messages.Encode(task)
		if err != nil {
			return res, err
		}
		if err := c.fanOut.Send(ctx, string(body)); err != nil {
			return res, fmt.Errorf("send exchange %d's reduce %d: %w", id, gi, err)
		}
		sent = append(sent, fmt.Sprint(gi))
	}
	res.Reason = fmt.Sprintf("exchange %d: %d maps done; reduce groups %s started", id, len(ex.Maps), strings.Join(sent, ","))
	log.Info("two-stage sort: reduces started", "exchange", id, "maps", len(ex.Maps), "reduces", len(ex.Reduces), "sent", len(sent))
	return res, nil
}

// abortOnInvariant ends the job on an invariant error and returns other
// errors for a retry.
func (c *Committer) abortOnInvariant(ctx context.Context, log *slog.Logger, job jobs.Job, res Result, err error) (Result, error) {
	if errors.Is(err, ErrInvariant) {
		return c.abort(ctx, log, job, jobs.Failed, err.Error(), "", messages.FailInvariant)
	}
	return res, err
}

// firstSortKey is the first field of sort order id in the pinned metadata,
// as a sortrows key (its column is not used).
func (c *Committer) firstSortKey(ctx context.Context, ident table.Identifier, job jobs.Job, id int) (sortrows.Key, error) {
	pinned, err := c.tables.Open(ctx, ident, job.Pin())
	if err != nil {
		return sortrows.Key{}, err
	}
	for _, o := range pinned.Metadata().SortOrders() {
		if o.OrderID() == id && o.Len() > 0 {
			f := o.Field(0)
			return sortrows.Key{Descending: f.Direction == table.SortDESC, NullsFirst: f.NullOrder == table.NullsFirst}, nil
		}
	}
	return sortrows.Key{}, fmt.Errorf("%w: sort order %d is not in the pinned metadata", ErrInvariant, id)
}

// exchangeCounts checks, at commit, that each exchange's reduces wrote
// exactly the rows its maps paged: none lost, none twice.
type exchangeCounts map[int]*struct{ paged, reduced int64 }

func (e exchangeCounts) add(id int, paged, reduced int64) {
	c := e[id]
	if c == nil {
		c = &struct{ paged, reduced int64 }{}
		e[id] = c
	}
	c.paged += paged
	c.reduced += reduced
}

func (e exchangeCounts) check() error {
	for id, c := range e {
		if c.paged != c.reduced {
			return fmt.Errorf("%w: exchange %d: its maps paged %d rows, its reduces wrote %d", ErrInvariant, id, c.paged, c.reduced)
		}
	}
	return nil
}

// removeScratch deletes a job's exchange pages (every attempt's).
func (c *Committer) removeScratch(ctx context.Context, job jobs.Job) error {
	keys, err := c.blobs.List(ctx, exchange.Prefix(job.ID))
	if err != nil {
		return err
	}
	var errs []error
	for _, k := range keys {
		if err := c.blobs.Delete(ctx, k); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
