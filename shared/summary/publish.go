package summary

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/shared/joblog"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/ledger"
)

// Store is icekeeper's bucket (blob.Store): the maintenance log, the
// health reports, and where the summary goes.
type Store interface {
	Put(ctx context.Context, name string, data []byte) (string, error)
	Get(ctx context.Context, key string) ([]byte, error)
	List(ctx context.Context, prefix string) ([]string, error)
}

// Ledger assesses a table's ledger (ledger.Book).
type Ledger interface {
	Assess(ctx context.Context, table string, now time.Time) (ledger.Assessment, error)
}

// Leases reads a table's lease item, for its failure back-off
// (lease.Store).
type Leases interface {
	Get(ctx context.Context, table string) (lease.Lease, bool, error)
}

// Events puts the summary's event on the bus (audit.Publisher).
type Events interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// Publisher gathers what is recorded, builds the week's summary, writes
// it to the bucket and puts its event. Ledger, Leases and Events are
// optional (a local run has no ledger; the CLI puts no event).
type Publisher struct {
	Store      Store
	Ledger     Ledger
	Leases     Leases
	Events     Events
	Deployment string
	Bucket     string
}

// Published is what Publish wrote.
type Published struct {
	Summary Summary `json:"summary"`
	Event   Event   `json:"event"`
}

// Gather reads what is recorded about tables for the summary built at at.
func (p Publisher) Gather(ctx context.Context, tables []string, at time.Time) (Input, error) {
	in := Input{Deployment: p.Deployment, At: at}
	from, _, _ := Week(at)
	log := joblog.New(p.Store)
	var errs []error
	for _, name := range tables {
		ti := TableInput{Table: name}
		// A job ends within hours of its creation: a day before the week
		// covers those created before it that ended in it.
		recs, err := log.ReadSince(ctx, name, from.AddDate(0, 0, -1))
		if err != nil {
			errs = append(errs, err)
		}
		ti.Records = recs
		if p.Ledger != nil {
			a, err := p.Ledger.Assess(ctx, name, at)
			if err != nil {
				errs = append(errs, fmt.Errorf("summary: ledger of %s: %w", name, err))
			} else {
				ti.Ledger = &a
			}
		}
		if p.Leases != nil {
			l, _, err := p.Leases.Get(ctx, name)
			if err != nil {
				errs = append(errs, fmt.Errorf("summary: lease of %s: %w", name, err))
			}
			ti.Failures = l.Backoff
		}
		h, err := p.latestHealth(ctx, name)
		if err != nil {
			errs = append(errs, err)
		}
		ti.Health = h
		in.Tables = append(in.Tables, ti)
	}
	return in, errors.Join(errs...)
}

// latestHealth reads the table's latest published health report (nil
// when none was published).
func (p Publisher) latestHealth(ctx context.Context, table string) (*Health, error) {
	name := "health/" + table + "/latest.json"
	keys, err := p.Store.List(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("summary: health report of %s: %w", table, err)
	}
	for _, k := range keys {
		if !strings.HasSuffix(k, name) {
			continue
		}
		b, err := p.Store.Get(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("summary: health report of %s: %w", table, err)
		}
		var h Health
		if err := json.Unmarshal(b, &h); err != nil {
			return nil, fmt.Errorf("summary: health report %s: %w", k, err)
		}
		return &h, nil
	}
	return nil, nil
}

// Publish builds the summary of tables at at, writes it (the week's keys
// and the latest), then puts its event. Re-running it in the same week
// overwrites the same keys and puts an event with the same summary_id.
// What could not be read is left out of the summary and returned joined
// with any write error; the summary is still written.
func (p Publisher) Publish(ctx context.Context, tables []string, at time.Time) (Published, error) {
	in, gerr := p.Gather(ctx, tables, at)
	s := Build(in)
	doc, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return Published{Summary: s}, fmt.Errorf("summary: encode %s: %w", s.ID, err)
	}
	var page bytes.Buffer
	if err := Render(&page, s); err != nil {
		return Published{Summary: s}, fmt.Errorf("summary: render %s: %w", s.ID, err)
	}
	jsonName, htmlName := Keys(s.Week)
	keys := map[string]string{}
	for _, w := range []struct {
		name string
		data []byte
	}{{jsonName, doc}, {htmlName, page.Bytes()}, {LatestJSON, doc}, {LatestHTML, page.Bytes()}} {
		k, err := p.Store.Put(ctx, w.name, w.data)
		if err != nil {
			return Published{Summary: s}, errors.Join(gerr, fmt.Errorf("summary: write %s: %w", w.name, err))
		}
		keys[w.name] = k
	}
	ev := EventOf(s, p.Bucket, keys[jsonName], keys[htmlName], keys[LatestJSON], keys[LatestHTML])
	out := Published{Summary: s, Event: ev}
	if p.Events == nil {
		return out, gerr
	}
	if b, _ := json.Marshal(ev); len(b) > MaxDetailBytes {
		return out, errors.Join(gerr, fmt.Errorf("summary: event of %s is %d bytes, more than %d", s.ID, len(b), MaxDetailBytes))
	}
	if err := p.Events.Publish(ctx, DetailType, ev); err != nil {
		return out, errors.Join(gerr, fmt.Errorf("summary: put event of %s: %w", s.ID, err))
	}
	return out, gerr
}
