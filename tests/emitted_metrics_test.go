package tests

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// The metrics contract. Every EMF line any end-to-end test emits is
// recorded by its signature: the metric name, its exact dimension set and
// the Function dimension's value. infra/testdata/emitted-metrics.json is the
// list of those signatures: the CDK stack's tests check every dashboard
// widget and alarm against it (infra/stack_test.go), so a SEARCH on a
// dimension set the code never emits cannot pass. After a full run of this
// package every recorded signature must be in the file (one that is not
// fails the run: add it with ICEKEEPER_UPDATE_METRICS=1, which rewrites the
// file from the run); signatures of the file the run did not emit are
// reported.

// metricsFile is the contract, relative to this package.
var metricsFile = filepath.Join("..", "infra", "testdata", "emitted-metrics.json")

// Signature is one emitted metric as CloudWatch stores it.
type Signature struct {
	Name       string   `json:"name"`
	Dimensions []string `json:"dimensions"`
	Function   string   `json:"function,omitempty"`
}

func (s Signature) key() string {
	return s.Name + "{" + strings.Join(s.Dimensions, ",") + "}" + s.Function
}

var emitted = struct {
	sync.Mutex
	m map[string]Signature
}{m: map[string]Signature{}}

// recordEMF records the signatures of the EMF lines in p (best effort: a
// line that does not parse is reported by the tests that read it).
func recordEMF(p []byte) {
	for _, line := range strings.Split(string(p), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		aws, _ := m["_aws"].(map[string]any)
		cwms, _ := aws["CloudWatchMetrics"].([]any)
		for _, d := range cwms {
			dm, _ := d.(map[string]any)
			sets, _ := dm["Dimensions"].([]any)
			metrics, _ := dm["Metrics"].([]any)
			for _, set := range sets {
				var dims []string
				for _, n := range set.([]any) {
					dims = append(dims, n.(string))
				}
				sort.Strings(dims)
				fn, _ := m["Function"].(string)
				for _, md := range metrics {
					s := Signature{Name: md.(map[string]any)["Name"].(string), Dimensions: dims, Function: fn}
					emitted.Lock()
					emitted.m[s.key()] = s
					emitted.Unlock()
				}
			}
		}
	}
}

// checkMetricsContract compares the recorded signatures with the file after
// a full run (no -run filter, not -short): it returns a description of any
// difference, or "" when they agree or the run was partial.
func checkMetricsContract() string {
	emitted.Lock()
	defer emitted.Unlock()
	var got []Signature
	for _, s := range emitted.m {
		got = append(got, s)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].key() < got[j].key() })
	if os.Getenv("ICEKEEPER_UPDATE_METRICS") != "" {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(metricsFile, append(b, '\n'), 0o644); err != nil {
			return err.Error()
		}
		return ""
	}
	if f := flag.Lookup("test.run"); f == nil || f.Value.String() != "" || flag.Lookup("test.short").Value.String() == "true" {
		return "" // a partial run records a subset
	}
	raw, err := os.ReadFile(metricsFile)
	if err != nil {
		return err.Error()
	}
	var want []Signature
	if err := json.Unmarshal(raw, &want); err != nil {
		return fmt.Sprintf("%s: %v", metricsFile, err)
	}
	inFile := map[string]bool{}
	for _, s := range want {
		inFile[s.key()] = true
	}
	var diffs []string
	for _, s := range got {
		if !inFile[s.key()] {
			diffs = append(diffs, "emitted but not in the file: "+s.key())
		}
		delete(inFile, s.key())
	}
	// A signature in the file that this run did not emit is only reported:
	// some metrics are emitted by one test path each, and a run that did not
	// take it says nothing about the code. The file is generated from runs.
	for k := range inFile {
		fmt.Fprintln(os.Stderr, "metrics contract: not emitted in this run:", k)
	}
	if len(diffs) == 0 {
		return ""
	}
	sort.Strings(diffs)
	return fmt.Sprintf("the metrics contract %s is out of date (run ICEKEEPER_UPDATE_METRICS=1 go test ./tests):\n  %s", metricsFile, strings.Join(diffs, "\n  "))
}
