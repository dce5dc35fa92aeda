package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
)

// TestCompact_SIGINTEndsTheRunAndRemovesWhatItWrote runs the real binary:
// `icekeeper compact --local` on a local table, interrupted with SIGINT as
// soon as the first new data file appears. The run ends with exit code 130
// and says so, no file it wrote is left in the warehouse, and the table's
// rows are unchanged. The signal comes once new files are in two
// partitions: one group is rewritten (its files are only removed by ending
// the job), the next is being written.
func TestCompact_SIGINTEndsTheRunAndRemovesWhatItWrote(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "icekeeper")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	uri, whDir := "file:"+filepath.Join(dir, "cat.db"), filepath.Join(dir, "wh")
	ctx := context.Background()
	cat, err := catalogs.Open(ctx, catalogs.Config{Type: "sql", Name: "local", URI: uri, Warehouse: "file://" + whDir}, configAWS())
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"shop", "orders"}
	tbl, err := sampletable.Create(ctx, cat, ident, sampletable.Options{FormatVersion: 2, Partitions: 4, Files: 6, RowsPerFile: 6000, PayloadBytes: 120, PositionDeletes: true})
	if err != nil {
		t.Fatal(err)
	}
	before, err := fingerprint.Table(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	filesBefore := parquetFiles(t, whDir)

	cmd := exec.Command(bin, "compact", "shop.orders", "--local", "--catalog", "sql", "--catalog-name", "local", "--uri", uri, "--warehouse", "file://"+whDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		dirs := map[string]bool{}
		for p := range parquetFiles(t, whDir) {
			if !filesBefore[p] {
				dirs[filepath.Dir(p)] = true
			}
		}
		if len(dirs) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no new data file appeared; stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want code 130; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("stderr does not say interrupted:\n%s", stderr.String())
	}
	for p := range parquetFiles(t, whDir) {
		if !filesBefore[p] {
			t.Fatalf("the interrupted run left %s", p)
		}
	}
	after, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if fp, _ := fingerprint.Table(ctx, after); fp != before {
		t.Fatalf("rows changed: %s -> %s", before, fp)
	}
}

func parquetFiles(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(p, ".parquet") {
			out[p] = true
		}
		return nil
	})
	return out
}
