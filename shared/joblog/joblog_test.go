package joblog

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/shared/ledger"
	"github.com/icekeeper/icekeeper/shared/pruning"
)

func TestLedgerEntry_WeighsCompactionsAndDeleteRewritesOnly(t *testing.T) {
	rec := Record{JobID: "j", Table: "ns.t", Kind: "compaction", Outcome: "committed", Reads: &pruning.Reads{Partitions: 1}, Cost: Cost{USD: 0.5}}
	if e, ok := rec.LedgerEntry(); !ok || e.Reads == nil || e.CostUSD != 0.5 {
		t.Errorf("a committed compaction: %+v %v", e, ok)
	}
	unmeasured := Record{JobID: "j", Table: "ns.t", Kind: "compaction", Outcome: "committed", Unmeasured: true, Cost: Cost{USD: 0.5}}
	if e, ok := unmeasured.LedgerEntry(); !ok || !e.Unmeasured || e.Reads != nil {
		t.Errorf("a committed compaction whose reads were not measured: %+v %v", e, ok)
	}
	rec.Outcome = "failed"
	if e, ok := rec.LedgerEntry(); !ok || e.Reads != nil {
		t.Errorf("a failed compaction must cost and save nothing: %+v %v", e, ok)
	}
	for _, k := range []string{"expire", "rewrite-manifests", "remove-orphans", "change-layout"} {
		if _, ok := (Record{Kind: k}).LedgerEntry(); ok {
			t.Errorf("%s is weighed", k)
		}
	}
}

type memStore map[string][]byte

func (m memStore) Put(_ context.Context, name string, data []byte) (string, error) {
	m[name] = data
	return name, nil
}
func (m memStore) Get(_ context.Context, key string) ([]byte, error) { return m[key], nil }
func (m memStore) List(_ context.Context, prefix string) ([]string, error) {
	var out []string
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out, nil
}

type ledgerSink struct {
	entries []ledger.Entry
	err     error
}

func (l *ledgerSink) Put(_ context.Context, _ string, e ledger.Entry) error {
	l.entries = append(l.entries, e)
	return l.err
}

// TestRecorder_WritesTheLogAndTheWeighedKindsToTheLedger: every record is
// in the log; only compactions and delete-file rewrites reach the ledger;
// a ledger that fails is reported, with the log's key.
func TestRecorder_WritesTheLogAndTheWeighedKindsToTheLedger(t *testing.T) {
	ctx := context.Background()
	store, sink := memStore{}, &ledgerSink{}
	rec := Recorder{Log: New(store), Ledger: sink}
	for _, kind := range []string{"compaction", "expire", "rewrite-deletes"} {
		if _, err := rec.Write(ctx, Record{JobID: kind, Table: "ns.t", Kind: kind, Outcome: "committed"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(store) != 3 || len(sink.entries) != 2 || sink.entries[0].JobID != "compaction" || sink.entries[1].JobID != "rewrite-deletes" {
		t.Fatalf("log %d records, ledger %+v", len(store), sink.entries)
	}
	sink.err = errors.New("throttled")
	key, err := rec.Write(ctx, Record{JobID: "late", Table: "ns.t", Kind: "compaction"})
	if err == nil || !strings.Contains(err.Error(), "throttled") || key == "" || store[key] == nil {
		t.Errorf("a failing ledger: key %q, err %v; want the log written and the error", key, err)
	}
}
