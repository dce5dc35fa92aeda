package commit

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/layouttrial"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/optin"
)

// changeLayout runs a layout change job (jobs.KindChangeLayout) in the
// committing state, under the table's lease: one visible commit that
// changes no file. For a sort, the table's default sort order becomes the
// plan's columns (ascending, nulls first) and its strategy sort; for a
// z-order, the strategy becomes z-order on the plan's columns. Later
// compactions then rewrite the table into it, run by run.
//
// The owner's word wins: when the table's default sort order is no longer
// the one the plan started from, the job ends without a change. A commit
// that lands meanwhile makes the catalog refuse the stale base: reload,
// check again, retry. The change is idempotent: a table already in the
// layout is left as it is.
func (c *Committer) changeLayout(ctx context.Context, log *slog.Logger, job jobs.Job, ident table.Identifier, term lease.Lease, me string) (Result, error) {
	res := Result{JobID: job.ID, Table: job.Table}
	data, err := c.blobs.Get(ctx, job.PlanKey)
	if err != nil {
		return res, fmt.Errorf("read layout plan: %w", err)
	}
	var p messages.LayoutPlan
	if err := messages.Decode(data, &p); err != nil || (p.Layout != "sort" && p.Layout != "z-order") || len(p.Columns) == 0 {
		return res, fmt.Errorf("%w: layout plan of job %s: %v (layout %q, %d columns)", ErrInvariant, job.ID, err, p.Layout, len(p.Columns))
	}
	if p.Verdict != "" {
		return c.settleTrial(ctx, log, job, ident, term, me, p)
	}
	return c.commitLoop(ctx, log, job, ident, term, me, "layout change", func(cur *table.Table) (*table.Transaction, string, error) {
		if got := cur.Metadata().DefaultSortOrder(); got != p.FromOrderID {
			return nil, fmt.Sprintf("the table's sort order changed since planning (%d, was %d): the owner's order stands", got, p.FromOrderID), nil
		}
		txn := cur.NewTransaction()
		// The trial the change starts (package layouttrial), recorded in
		// the same commit: what it replaced, so a revert can restore it.
		from := cur.Properties()
		at := p.At
		if at.IsZero() {
			at = c.now()
		}
		trial := layouttrial.Trial{Layout: p.Layout, Columns: p.Columns, FromOrderID: p.FromOrderID, FromStrategy: from[optin.PropertyCompactionStrategy], At: at.UTC().Truncate(time.Second)}
		if z := from[optin.PropertyZOrderColumns]; z != "" {
			trial.FromZOrder = strings.Split(z, ",")
		}
		changed, err := stageLayout(txn, cur, p, trial.Format())
		if err != nil {
			return nil, "", fmt.Errorf("%w: %w", ErrInvariant, err)
		}
		if !changed {
			return nil, "the table is already in that layout", nil
		}
		return txn, "", nil
	}, func(*Result) string {
		return fmt.Sprintf("layout changed to %s on %s: %s", p.Layout, strings.Join(p.Columns, ", "), p.Why)
	})
}

// stageLayout stages the plan's layout on txn; false when tbl is in it
// already.
func stageLayout(txn *table.Transaction, tbl *table.Table, p messages.LayoutPlan, trial string) (bool, error) {
	props := iceberg.Properties{optin.PropertyCompactionStrategy: p.Layout, layouttrial.PropertyTrial: trial}
	if p.Layout == "z-order" {
		props[optin.PropertyZOrderColumns] = strings.Join(p.Columns, ",")
		same := tbl.Properties()[optin.PropertyCompactionStrategy] == p.Layout && tbl.Properties()[optin.PropertyZOrderColumns] == props[optin.PropertyZOrderColumns]
		if same {
			return false, nil
		}
		return true, txn.SetProperties(props)
	}
	var fields []table.SortField
	var current []string
	schema := tbl.Schema()
	for _, f := range tbl.SortOrder().Fields() {
		name, _ := schema.FindColumnName(f.SourceID())
		current = append(current, name)
	}
	for _, col := range p.Columns {
		f, ok := schema.FindFieldByName(col)
		if !ok {
			return false, fmt.Errorf("column %q is not in the table's schema", col)
		}
		fields = append(fields, table.SortField{SourceIDs: []int{f.ID}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst})
	}
	if slices.Equal(current, p.Columns) && tbl.Properties()[optin.PropertyCompactionStrategy] == p.Layout {
		return false, nil
	}
	order, err := table.NewSortOrder(table.InitialSortOrderID, fields)
	if err != nil {
		return false, err
	}
	if !slices.Equal(current, p.Columns) {
		if err := txn.ReplaceSortOrder(order); err != nil {
			return false, err
		}
	}
	return true, txn.SetProperties(props)
}

// settleTrial ends the table's layout trial with the plan's verdict, in
// one commit that changes no file: keep removes the trial (the rollout
// continues); revert restores the sort order, strategy and z-order
// columns the trial's change replaced, removes the trial and records the
// layout in layouttrial.PropertyRejected. The commit is fenced on the
// table's default sort order and spec (AssertDefaultShape: the catalog
// refuses it when another writer changed either meanwhile), and it
// stands down when the trial or the sort order changed since planning
// (the owner's word wins).
func (c *Committer) settleTrial(ctx context.Context, log *slog.Logger, job jobs.Job, ident table.Identifier, term lease.Lease, me string, p messages.LayoutPlan) (Result, error) {
	if p.Verdict != layouttrial.Keep && p.Verdict != layouttrial.Revert {
		return Result{JobID: job.ID, Table: job.Table}, fmt.Errorf("%w: layout plan of job %s: verdict %q", ErrInvariant, job.ID, p.Verdict)
	}
	return c.commitLoop(ctx, log, job, ident, term, me, "layout "+p.Verdict, func(cur *table.Table) (*table.Transaction, string, error) {
		props := cur.Properties()
		if props[layouttrial.PropertyTrial] != p.Trial {
			return nil, "the table's layout trial changed since planning: nothing to settle", nil
		}
		if got := cur.Metadata().DefaultSortOrder(); got != p.FromOrderID {
			return nil, fmt.Sprintf("the table's sort order changed since planning (%d, was %d): the owner's order stands", got, p.FromOrderID), nil
		}
		trial, _, err := layouttrial.ParseTrial(props)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %w", ErrInvariant, err)
		}
		txn := cur.NewTransaction()
		if err := txn.AssertDefaultShape(); err != nil {
			return nil, "", err
		}
		if p.Verdict == layouttrial.Keep {
			return txn, "", txn.RemoveProperties([]string{layouttrial.PropertyTrial})
		}
		order := table.UnsortedSortOrder
		for _, o := range cur.Metadata().SortOrders() {
			if o.OrderID() == trial.FromOrderID {
				order = o
			}
		}
		if err := txn.ReplaceSortOrder(order); err != nil {
			return nil, "", err
		}
		rejected, err := layouttrial.WithRejected(props, layouttrial.Rejection{Layout: trial.Layout, Columns: trial.Columns, At: c.now().UTC().Truncate(time.Second)})
		if err != nil {
			return nil, "", fmt.Errorf("%w: %w", ErrInvariant, err)
		}
		set := iceberg.Properties{layouttrial.PropertyRejected: rejected}
		remove := []string{layouttrial.PropertyTrial}
		if trial.FromStrategy != "" {
			set[optin.PropertyCompactionStrategy] = trial.FromStrategy
		} else {
			remove = append(remove, optin.PropertyCompactionStrategy)
		}
		if len(trial.FromZOrder) > 0 {
			set[optin.PropertyZOrderColumns] = strings.Join(trial.FromZOrder, ",")
		} else if props[optin.PropertyZOrderColumns] != "" {
			remove = append(remove, optin.PropertyZOrderColumns)
		}
		if err := txn.SetProperties(set); err != nil {
			return nil, "", err
		}
		return txn, "", txn.RemoveProperties(remove)
	}, func(*Result) string {
		return fmt.Sprintf("layout trial settled: %s: %s", p.Verdict, p.Why)
	})
}
