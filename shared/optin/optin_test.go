package optin

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDecide_TheFourCases(t *testing.T) {
	t.Parallel()
	g, err := ParseGrants("sales, ops.audit, lake.raw.*")
	if err != nil {
		t.Fatal(err)
	}
	on := map[string]string{PropertyEnabled: "true"}
	tests := []struct {
		name           string
		table          string
		props          map[string]string
		eligible, loud bool
	}{
		{"both keys", "sales.orders", on, true, false},
		{"grant without property", "sales.orders", nil, false, false},
		{"property without grant", "hr.people", on, false, true},
		{"neither", "hr.people", nil, false, false},
		{"table grant", "ops.audit", on, true, false},
		{"other table of a table grant's namespace", "ops.metrics", on, false, true},
		{"nested namespace grant", "lake.raw.events", on, true, false},
		{"property false", "sales.orders", map[string]string{PropertyEnabled: "false"}, false, false},
	}
	for _, tc := range tests {
		d := Decide(tc.table, tc.props, g)
		if d.Eligible != tc.eligible || d.Loud != tc.loud || d.Reason == "" {
			t.Errorf("%s: %+v, want eligible=%v loud=%v", tc.name, d, tc.eligible, tc.loud)
		}
	}
}

func TestParseGrants_RejectsMalformedEntries(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"a..b", ".x", "*", "a.*.b"} {
		if _, err := ParseGrants(s); !errors.Is(err, ErrBadGrant) {
			t.Errorf("%q: %v, want ErrBadGrant", s, err)
		}
	}
	g, err := ParseGrants(" , sales ,ops.audit")
	if err != nil || g.String() != "sales.*,ops.audit" || g.Empty() {
		t.Fatalf("%v %q", err, g.String())
	}
	if e, _ := ParseGrants(""); !e.Empty() {
		t.Fatal("empty list not empty")
	}
}

func TestValidateProperties_RejectsCredentialShapedKeys(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"icekeeper.aws.secret", "icekeeper.s3.secret-access-key", "icekeeper.catalog.password",
		"icekeeper.rest.token", "icekeeper.api-key", "icekeeper.accessKey", "icekeeper.credentials"} {
		err := ValidateProperties(map[string]string{k: "x"})
		if !errors.Is(err, ErrCredentialProperty) {
			t.Errorf("%s: %v, want ErrCredentialProperty", k, err)
		}
	}
	ok := map[string]string{PropertyEnabled: "true", PropertyMinInterval: "30m", "icekeeper.compaction.target": "x",
		"s3.secret-access-key": "not ours to judge", "write.target-file-size-bytes": "1"}
	if err := ValidateProperties(ok); err != nil {
		t.Fatalf("valid properties rejected: %v", err)
	}
	if err := ValidateProperties(map[string]string{PropertyMinInterval: "soon"}); !errors.Is(err, ErrBadProperty) {
		t.Fatalf("bad interval: %v", err)
	}
	if MinInterval(map[string]string{PropertyMinInterval: "2h"}, time.Hour) != 2*time.Hour || MinInterval(nil, time.Hour) != time.Hour {
		t.Fatal("MinInterval")
	}
}

func TestHotPartitions_OffByDefaultAndBadValuesAreRefused(t *testing.T) {
	idle, minFiles, err := HotPartitions(map[string]string{})
	if err != nil || idle != 0 || minFiles != DefaultHotPartitionMinFiles {
		t.Fatalf("defaults: %s %d %v", idle, minFiles, err)
	}
	idle, minFiles, err = HotPartitions(map[string]string{PropertyHotPartitionIdleTime: "10m", PropertyHotPartitionMinFiles: "40"})
	if err != nil || idle.Minutes() != 10 || minFiles != 40 {
		t.Fatalf("set: %s %d %v", idle, minFiles, err)
	}
	for _, bad := range []map[string]string{
		{PropertyHotPartitionIdleTime: "soon"},
		{PropertyHotPartitionIdleTime: "-1m"},
		{PropertyHotPartitionMinFiles: "0"},
	} {
		if _, _, err := HotPartitions(bad); !errors.Is(err, ErrBadProperty) {
			t.Fatalf("%v: %v, want ErrBadProperty", bad, err)
		}
		if err := ValidateProperties(bad); !errors.Is(err, ErrBadProperty) {
			t.Fatalf("ValidateProperties(%v): %v, want ErrBadProperty", bad, err)
		}
	}
}

func TestHotPartitionMinFileAge_OffByDefaultAndBadValuesAreRefused(t *testing.T) {
	if age, err := HotPartitionMinFileAge(map[string]string{}); err != nil || age != 0 {
		t.Fatalf("default: %s %v", age, err)
	}
	if age, err := HotPartitionMinFileAge(map[string]string{PropertyHotPartitionMinFileAge: "2h"}); err != nil || age != 2*time.Hour {
		t.Fatalf("set: %s %v", age, err)
	}
	for _, bad := range []string{"later", "-1h"} {
		props := map[string]string{PropertyHotPartitionMinFileAge: bad}
		if _, err := HotPartitionMinFileAge(props); !errors.Is(err, ErrBadProperty) {
			t.Fatalf("%q: %v, want ErrBadProperty", bad, err)
		}
		if err := ValidateProperties(props); !errors.Is(err, ErrBadProperty) {
			t.Fatalf("ValidateProperties(%q): %v, want ErrBadProperty", bad, err)
		}
	}
}

// TestPartialProgress_MaxCommitsIsCappedSoTheJobRecordStaysBounded: a
// max-commits above MaxPartialProgressCommits is taken as the cap (each
// batch leaves an entry in the job's DynamoDB item); the cap itself is
// kept.
func TestPartialProgress_MaxCommitsIsCappedSoTheJobRecordStaysBounded(t *testing.T) {
	for v, want := range map[string]int{"100": 100, "101": 100, "1000000": 100, "99": 99} {
		n, err := PartialProgress(map[string]string{PropertyPartialProgressEnabled: "true", PropertyPartialProgressMaxCommits: v})
		if err != nil || n != want {
			t.Errorf("max-commits %s: %d %v, want %d", v, n, err, want)
		}
	}
}

func TestPartialProgress_OffByDefaultMaxCommitsDefaultsToSparksAndBadValuesAreRefused(t *testing.T) {
	for _, props := range []map[string]string{{}, {PropertyPartialProgressEnabled: "false"}, {PropertyPartialProgressMaxCommits: "4"}} {
		if n, err := PartialProgress(props); err != nil || n != 0 {
			t.Fatalf("%v: %d %v, want off", props, n, err)
		}
	}
	if n, err := PartialProgress(map[string]string{PropertyPartialProgressEnabled: "true"}); err != nil || n != 10 {
		t.Fatalf("enabled: %d %v, want Spark's 10", n, err)
	}
	if n, err := PartialProgress(map[string]string{PropertyPartialProgressEnabled: "TRUE", PropertyPartialProgressMaxCommits: " 3 "}); err != nil || n != 3 {
		t.Fatalf("max-commits 3: %d %v", n, err)
	}
	for _, bad := range []map[string]string{
		{PropertyPartialProgressEnabled: "yes please"},
		{PropertyPartialProgressEnabled: "true", PropertyPartialProgressMaxCommits: "0"},
		{PropertyPartialProgressEnabled: "true", PropertyPartialProgressMaxCommits: "many"},
	} {
		if _, err := PartialProgress(bad); !errors.Is(err, ErrBadProperty) {
			t.Fatalf("%v: %v, want ErrBadProperty", bad, err)
		}
		if err := ValidateProperties(bad); !errors.Is(err, ErrBadProperty) {
			t.Fatalf("ValidateProperties(%v): %v, want ErrBadProperty", bad, err)
		}
	}
	// A malformed max-commits is refused even while partial progress is off.
	if err := ValidateProperties(map[string]string{PropertyPartialProgressMaxCommits: "-2"}); !errors.Is(err, ErrBadProperty) {
		t.Fatalf("ValidateProperties(max-commits -2): %v, want ErrBadProperty", err)
	}
}

func TestCompactionStrategy_BinpackByDefaultAndBadLayoutsAreRefused(t *testing.T) {
	for props, want := range map[string]Strategy{"": StrategyBinpack, "sort": StrategySort, " Z-Order ": StrategyZOrder} {
		got, err := CompactionStrategy(map[string]string{PropertyCompactionStrategy: props})
		if err != nil || got != want {
			t.Errorf("%q: %s %v, want %s", props, got, err, want)
		}
	}
	if cols, err := ZOrderColumns(map[string]string{PropertyCompactionStrategy: "z-order", PropertyZOrderColumns: " id , ts "}); err != nil || len(cols) != 2 || cols[0] != "id" || cols[1] != "ts" {
		t.Errorf("z-order columns %q %v", cols, err)
	}
	for name, props := range map[string]map[string]string{
		"unknown strategy":        {PropertyCompactionStrategy: "zorder"},
		"z-order without columns": {PropertyCompactionStrategy: "z-order"},
		"one column":              {PropertyZOrderColumns: "id"},
		"empty name":              {PropertyZOrderColumns: "id,,ts"},
		"repeated column":         {PropertyZOrderColumns: "id,id"},
		"nine columns":            {PropertyZOrderColumns: "a,b,c,d,e,f,g,h,i"},
	} {
		if err := ValidateProperties(props); !errors.Is(err, ErrBadProperty) {
			t.Errorf("%s: %v, want a bad property", name, err)
		}
	}
}

func TestValidateProperties_LayoutClassAndSustainedWindowsAreChecked(t *testing.T) {
	t.Parallel()
	for _, good := range []map[string]string{
		{"icekeeper.layout.class": "auto"}, {"icekeeper.layout.class": "dashboard"},
		{"icekeeper.layout.sustained-windows": "1"}, {"icekeeper.layout.sustained-windows": "3"},
	} {
		if err := ValidateProperties(good); err != nil {
			t.Errorf("%v rejected: %v", good, err)
		}
	}
	for _, bad := range []map[string]string{
		{"icekeeper.layout.class": "reports"}, {"icekeeper.layout.sustained-windows": "0"},
		{"icekeeper.layout.sustained-windows": "two"}, {"icekeeper.layout.sustained-windows": "2.5"},
	} {
		err := ValidateProperties(bad)
		if !errors.Is(err, ErrBadProperty) {
			t.Errorf("%v: %v, want ErrBadProperty", bad, err)
			continue
		}
		for k := range bad {
			if !strings.Contains(err.Error(), k) {
				t.Errorf("%v: %v does not name the property", bad, err)
			}
		}
	}
}

func TestCompactionMinInputFiles_IcebergsDefaultOneCountsAsTwoAndBadValuesAreRefused(t *testing.T) {
	for _, c := range []struct {
		v    string
		want int
	}{{"", 5}, {"3", 3}, {" 2 ", 2}, {"1", 2}, {"40", 40}} {
		props := map[string]string{}
		if c.v != "" {
			props[PropertyCompactionMinInputFiles] = c.v
		}
		if n, err := CompactionMinInputFiles(props, 5); err != nil || n != c.want {
			t.Fatalf("%q: %d %v, want %d", c.v, n, err, c.want)
		}
		if err := ValidateProperties(props); err != nil {
			t.Fatalf("ValidateProperties(%q): %v", c.v, err)
		}
	}
	for _, bad := range []string{"0", "-3", "five", ""} {
		props := map[string]string{PropertyCompactionMinInputFiles: bad}
		if _, err := CompactionMinInputFiles(props, 5); !errors.Is(err, ErrBadProperty) {
			t.Fatalf("%q: %v, want ErrBadProperty", bad, err)
		}
		if err := ValidateProperties(props); !errors.Is(err, ErrBadProperty) {
			t.Fatalf("ValidateProperties(%q): %v, want ErrBadProperty", bad, err)
		}
	}
}
