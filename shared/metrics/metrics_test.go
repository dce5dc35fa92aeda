package metrics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"
)

var fixedNow = time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)

func clock() time.Time { return fixedNow }

// emfLine is the documented structure of one line.
type emfLine struct {
	AWS struct {
		Timestamp         int64 `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string     `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name string `json:"Name"`
				Unit string `json:"Unit"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	} `json:"_aws"`
}

func TestEmitter_WritesOneDocumentedEMFLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	em := NewEmitter(&buf, "", clock)
	err := em.Emit(map[string]string{"table": "demo.orders", "mode": "active"},
		Metric{Name: "DataFiles", Value: 48, Unit: Count},
		Metric{Name: "AvgFileBytes", Value: 3379.5, Unit: Bytes},
		Metric{Name: "HealthScore", Value: 42.5},
	)
	if err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if n := bytes.Count(buf.Bytes(), []byte("\n")); n != 1 || out[len(out)-1] != '\n' {
		t.Fatalf("want exactly one line, got %q", out)
	}
	var line emfLine
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not JSON: %v: %s", err, out)
	}
	if line.AWS.Timestamp != fixedNow.UnixMilli() {
		t.Fatalf("Timestamp %d, want %d", line.AWS.Timestamp, fixedNow.UnixMilli())
	}
	if len(line.AWS.CloudWatchMetrics) != 1 {
		t.Fatalf("CloudWatchMetrics %+v", line.AWS.CloudWatchMetrics)
	}
	d := line.AWS.CloudWatchMetrics[0]
	if d.Namespace != DefaultNamespace {
		t.Fatalf("namespace %q", d.Namespace)
	}
	if !reflect.DeepEqual(d.Dimensions, [][]string{{"mode", "table"}}) {
		t.Fatalf("dimensions %v, want one sorted set", d.Dimensions)
	}
	wantDefs := map[string]string{"DataFiles": Count, "AvgFileBytes": Bytes, "HealthScore": None}
	if len(d.Metrics) != len(wantDefs) {
		t.Fatalf("metrics %+v", d.Metrics)
	}
	for _, m := range d.Metrics {
		if wantDefs[m.Name] != m.Unit {
			t.Fatalf("metric %s unit %q, want %q", m.Name, m.Unit, wantDefs[m.Name])
		}
	}
	var top map[string]any
	if err := json.Unmarshal(buf.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"table": "demo.orders", "mode": "active", "DataFiles": 48.0, "AvgFileBytes": 3379.5, "HealthScore": 42.5} {
		if top[k] != want {
			t.Fatalf("member %s = %v, want %v", k, top[k], want)
		}
	}
}

func TestEmitter_CustomNamespaceAndNoDimensions(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := NewEmitter(&buf, "Other", clock).Emit(nil, Metric{Name: "X", Value: 1, Unit: Seconds}); err != nil {
		t.Fatal(err)
	}
	var line emfLine
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	d := line.AWS.CloudWatchMetrics[0]
	if d.Namespace != "Other" || len(d.Dimensions) != 1 || len(d.Dimensions[0]) != 0 {
		t.Fatalf("directive %+v", d)
	}
}

func TestEmitter_RejectsInvalidEventsAndWritesNothing(t *testing.T) {
	t.Parallel()
	many := make([]Metric, MaxMetrics+1)
	for i := range many {
		many[i] = Metric{Name: "M" + strconv.Itoa(i), Value: 1}
	}
	for _, tc := range []struct {
		name string
		dims map[string]string
		ms   []Metric
	}{
		{"no metrics", nil, nil},
		{"empty name", nil, []Metric{{Name: "", Value: 1}}},
		{"duplicate metric", nil, []Metric{{Name: "A", Value: 1}, {Name: "A", Value: 2}}},
		{"metric named like a dimension", map[string]string{"table": "t"}, []Metric{{Name: "table", Value: 1}}},
		{"reserved name", nil, []Metric{{Name: "_aws", Value: 1}}},
		{"NaN", nil, []Metric{{Name: "A", Value: math.NaN()}}},
		{"Inf", nil, []Metric{{Name: "A", Value: math.Inf(1)}}},
		{"unknown unit", nil, []Metric{{Name: "A", Value: 1, Unit: "Furlongs"}}},
		{"empty dimension value", map[string]string{"table": ""}, []Metric{{Name: "A", Value: 1}}},
		{"too many metrics", nil, many},
		{"unknown publication", nil, []Metric{{Name: "A", Value: 1, Publish: Publication(9)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := NewEmitter(&buf, "", clock).Emit(tc.dims, tc.ms...)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
			if buf.Len() != 0 {
				t.Fatalf("wrote %q", buf.String())
			}
		})
	}
}

// TestEmitter_TableIsADimensionOfPerTableMetricsOnly: on a line about a
// table, an aggregated metric is published without Table (one metric for
// the deployment), a per-table one with it, a log-only one not at all; the
// record carries the table and every value.
func TestEmitter_TableIsADimensionOfPerTableMetricsOnly(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	err := NewEmitter(&buf, "", clock).Emit(map[string]string{TableDimension: "demo.orders", "Function": "committer"},
		Metric{Name: "JobsCommitted", Value: 1, Unit: Count},
		Metric{Name: "ConflictAborts", Value: 1, Unit: Count, Publish: PerTable},
		Metric{Name: "DataFiles", Value: 48, Unit: Count, Publish: LogOnly},
		Metric{Name: "CommitDuration", Value: 7, Unit: Milliseconds},
	)
	if err != nil {
		t.Fatal(err)
	}
	var line emfLine
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	published := map[string][][]string{}
	for _, d := range line.AWS.CloudWatchMetrics {
		for _, m := range d.Metrics {
			published[m.Name] = append(published[m.Name], d.Dimensions...)
		}
	}
	want := map[string][][]string{
		"JobsCommitted":  {{"Function"}},
		"CommitDuration": {{"Function"}},
		"ConflictAborts": {{"Function", "Table"}},
	}
	if !reflect.DeepEqual(published, want) {
		t.Fatalf("published %v, want %v", published, want)
	}
	var top map[string]any
	if err := json.Unmarshal(buf.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"Table": "demo.orders", "Function": "committer", "JobsCommitted": 1.0, "ConflictAborts": 1.0, "DataFiles": 48.0, "CommitDuration": 7.0} {
		if top[k] != v {
			t.Fatalf("member %s = %v, want %v", k, top[k], v)
		}
	}
}

// TestEmitter_PerTableMetricWithoutTableIsPublishedWithTheOthers: a line
// with no Table has one dimension set for every published metric.
func TestEmitter_PerTableMetricWithoutTableIsPublishedWithTheOthers(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := NewEmitter(&buf, "", clock).Emit(map[string]string{"Function": "planner"},
		Metric{Name: "A", Value: 1}, Metric{Name: "B", Value: 2, Publish: PerTable}); err != nil {
		t.Fatal(err)
	}
	var line emfLine
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if d := line.AWS.CloudWatchMetrics; len(d) != 1 || len(d[0].Metrics) != 2 || !reflect.DeepEqual(d[0].Dimensions, [][]string{{"Function"}}) {
		t.Fatalf("directives %+v", d)
	}
}

// TestEmitter_LogOnlyLineIsAPlainLogRecord: a line none of whose values is
// published has no "_aws" member (no metric, only its log ingestion).
func TestEmitter_LogOnlyLineIsAPlainLogRecord(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := NewEmitter(&buf, "", clock).Emit(map[string]string{TableDimension: "demo.orders"},
		Metric{Name: "Snapshots", Value: 3, Unit: Count, Publish: LogOnly}); err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := json.Unmarshal(buf.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	if _, ok := top["_aws"]; ok || top["Snapshots"] != 3.0 || top["Table"] != "demo.orders" {
		t.Fatalf("line %s", buf.String())
	}
}

// slowWriter writes a line in several small pieces, so unsynchronised
// writers would interleave.
type slowWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *slowWriter) Write(p []byte) (int, error) {
	for i := 0; i < len(p); i += 7 {
		end := min(i+7, len(p))
		w.mu.Lock()
		w.buf.Write(p[i:end])
		w.mu.Unlock()
		time.Sleep(time.Microsecond)
	}
	return len(p), nil
}

func TestEmitter_ConcurrentEmitsProduceWholeLines(t *testing.T) {
	t.Parallel()
	w := &slowWriter{}
	em := NewEmitter(w, "", clock)
	const writers, each = 8, 20
	var wg sync.WaitGroup
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := em.Emit(map[string]string{"table": "t" + strconv.Itoa(g)}, Metric{Name: "N", Value: float64(i), Unit: Count}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	sc := bufio.NewScanner(bytes.NewReader(w.buf.Bytes()))
	lines := 0
	for sc.Scan() {
		var line emfLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d is not whole JSON: %v: %s", lines, err, sc.Text())
		}
		lines++
	}
	if lines != writers*each {
		t.Fatalf("%d lines, want %d", lines, writers*each)
	}
}
