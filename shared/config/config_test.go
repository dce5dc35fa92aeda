package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func lookup(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromLookup_ReadsEverySettingAndRoundTripsThroughEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		EnvCatalogType: "rest", EnvCatalogURI: "https://glue.us-east-1.amazonaws.com/iceberg", EnvCatalogSigV4: "true",
		EnvCatalogSignName: "glue", EnvCatalogProperties: "s3.region=us-east-1, rest.sigv4-enabled=true",
		EnvLeaseTable: "leases", EnvJobsTable: "jobs", EnvTaskQueueURL: "q1", EnvCommitQueueURL: "q2",
		EnvBucket: "b", EnvMode: "active", EnvGrants: "db.a, sales", EnvLeaseTTL: "45m", EnvMaxGroupBytes: "1073741824",
		EnvMaxTaskAttempts: "4", EnvCommitTakeover: "20m", EnvScanPricePerTB: "6.25", EnvLedgerBackOff: "72h", EnvMaxJobFiles: "250000",
		EnvRewriterConcurrency: "50", EnvReadAheadFiles: "-1", EnvUploadPartBytes: "134217728",
		EnvWakeUpGroup: "icekeeper-wakeups", EnvWakeUpRoleARN: "arn:aws:iam::123456789012:role/s", EnvEventBusARN: "arn:aws:events:us-east-1:123456789012:event-bus/icekeeper",
	}
	c, err := FromLookup(lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	if c.Catalog.Type != "rest" || !c.Catalog.SigV4 || c.Catalog.SigningName != "glue" || c.Catalog.Properties["s3.region"] != "us-east-1" {
		t.Fatalf("catalog %+v", c.Catalog)
	}
	if c.LeaseTTL != 45*time.Minute || c.MaxGroupBytes != 1<<30 || c.MaxTaskAttempts != 4 || c.CommitTakeover != 20*time.Minute ||
		c.ScanPricePerTB != 6.25 || c.LedgerBackOff != 72*time.Hour || c.MaxJobFiles != 250_000 || c.RewriterConcurrency != 50 || c.ReadAheadFiles != -1 || c.UploadPartBytes != 128<<20 {
		t.Fatalf("settings %+v", c)
	}
	if c.Mode != ModeActive || c.Grants != "db.a, sales" {
		t.Fatalf("mode %q grants %q", c.Mode, c.Grants)
	}
	if err := c.Validate(NeedCatalog, NeedLeases, NeedJobs, NeedTaskQueue, NeedCommitQueue, NeedBucket); err != nil {
		t.Fatal(err)
	}
	again, err := FromLookup(lookup(c.Env()))
	if err != nil {
		t.Fatal(err)
	}
	if again.LeaseTTL != c.LeaseTTL || again.Catalog.Properties["s3.region"] != "us-east-1" || again.TaskQueueURL != "q1" ||
		again.ScanPricePerTB != 6.25 || again.LedgerBackOff != 72*time.Hour || again.RewriterConcurrency != 50 || again.ReadAheadFiles != -1 || again.UploadPartBytes != 128<<20 ||
		!again.WakeUps() || again.WakeUpGroup != "icekeeper-wakeups" || again.WakeUpRoleARN != env[EnvWakeUpRoleARN] || again.EventBusARN != env[EnvEventBusARN] {
		t.Fatalf("round trip lost settings: %+v", again)
	}
}

func TestFromLookup_BadValuesNameTheSetting(t *testing.T) {
	t.Parallel()
	for k, v := range map[string]string{
		EnvLeaseTTL: "soon", EnvMaxGroupBytes: "-1", EnvMode: "on", EnvMinInterval: "later", EnvMaxTaskAttempts: "x", EnvCatalogSigV4: "maybe", EnvCatalogProperties: "novalue",
		EnvScanPricePerTB: "-5", EnvLedgerBackOff: "0s", EnvMaxJobFiles: "-1", EnvRewriterConcurrency: "0", EnvReadAheadFiles: "-2", EnvUploadPartBytes: "1048576",
	} {
		_, err := FromLookup(lookup(map[string]string{k: v}))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%q: err %v, want ErrInvalid naming the variable", k, v, err)
		}
	}
}

// TestFromLookup_TheWakeUpsNeedAllThreeSettingsOrNone: one or two of the
// schedule group, the role and the bus's ARN is an error naming all
// three; none leaves the wake-ups off.
func TestFromLookup_TheWakeUpsNeedAllThreeSettingsOrNone(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{
		{EnvWakeUpGroup: "g"},
		{EnvWakeUpGroup: "g", EnvWakeUpRoleARN: "r"},
		{EnvEventBusARN: "b"},
	} {
		_, err := FromLookup(lookup(env))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), EnvWakeUpGroup) || !strings.Contains(err.Error(), EnvEventBusARN) {
			t.Errorf("%v: err %v, want ErrInvalid naming the three", env, err)
		}
	}
	if c, err := FromLookup(lookup(nil)); err != nil || c.WakeUps() {
		t.Fatalf("none set: wake-ups %v, err %v", c.WakeUps(), err)
	}
}

func TestValidate_NamesEveryMissingResource(t *testing.T) {
	t.Parallel()
	err := Defaults().Validate(NeedLeases, NeedJobs, NeedBucket, NeedTaskQueue, NeedCommitQueue, NeedCatalog)
	for _, k := range []string{EnvLeaseTable, EnvJobsTable, EnvBucket, EnvTaskQueueURL, EnvCommitQueueURL, "ICEKEEPER_CATALOG_TYPE"} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("error %v does not name %s", err, k)
		}
	}
}

func TestValidate_ActiveModeRefusesToStartWithoutGrants(t *testing.T) {
	t.Parallel()
	c := Defaults()
	c.Mode = ModeActive
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), EnvGrants) {
		t.Fatalf("active without grants: %v", err)
	}
	c.Grants = "sales"
	if err := c.Validate(); err != nil {
		t.Fatalf("active with grants: %v", err)
	}
	if Defaults().Mode != ModeOff {
		t.Fatal("the default mode must be off")
	}
}

// TestFromLookup_ReadsTheGrantListFromTheFileTheStackShips: a grant list
// too long for Lambda's environment comes as ICEKEEPER_GRANTS_FILE, a path
// relative to LAMBDA_TASK_ROOT (the function's code), one entry per line
// or comma-separated; it is the grant list the functions then enforce.
func TestFromLookup_ReadsTheGrantListFromTheFileTheStackShips(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "grants.txt"), []byte("db000.t000\ndb000.t001, db001.*\n\nsales\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := FromLookup(lookup(map[string]string{EnvMode: "active", EnvGrantsFile: "grants.txt", "LAMBDA_TASK_ROOT": root}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Grants != "db000.t000,db000.t001,db001.*,sales" {
		t.Fatalf("grants %q", c.Grants)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("active with the file's grants: %v", err)
	}
	if _, err := FromLookup(lookup(map[string]string{EnvGrants: "a", EnvGrantsFile: "grants.txt", "LAMBDA_TASK_ROOT": root})); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("both set: err %v, want refused", err)
	}
	if _, err := FromLookup(lookup(map[string]string{EnvGrantsFile: filepath.Join(root, "missing.txt")})); !errors.Is(err, ErrInvalid) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: err %v, want ErrInvalid wrapping not-exist", err)
	}
}
