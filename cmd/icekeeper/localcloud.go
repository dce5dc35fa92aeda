package main

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
)

func runLocalCloud(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("local-cloud", stderr)
	addr := fs.String("addr", "127.0.0.1:4566", "address to serve the emulator on (LocalStack's port by default)")
	prefix := fs.String("prefix", "icekeeper", "name prefix of the resources to create")
	mode := fs.String("mode", string(config.ModeActive), "ICEKEEPER_MODE to print: off, advisory or active")
	grants := fs.String("grants", "demo.*", "ICEKEEPER_GRANTS to print: the namespaces and tables icekeeper may maintain")
	if _, err := parseInterspersed(fs, args); err != nil {
		return err
	}
	cloud, err := localcloud.Listen(*addr)
	if err != nil {
		return err
	}
	defer cloud.Close()
	if _, err := config.ParseMode(*mode); err != nil {
		return exitError{code: 2, err: err}
	}
	cfg := config.Defaults()
	res, err := cloud.Provision(ctx, *prefix, "local", cfg.MaxTaskAttempts)
	if err != nil {
		return err
	}
	res.Apply(&cfg)
	env := map[string]string{
		"AWS_ENDPOINT_URL": cloud.URL, "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		config.EnvLeaseTable: cfg.LeaseTable, config.EnvJobsTable: cfg.JobsTable,
		config.EnvTaskQueueURL: cfg.TaskQueueURL, config.EnvCommitQueueURL: cfg.CommitQueueURL,
		config.EnvBucket: cfg.Bucket,
		// Without these the first invoke of the planner does nothing (mode
		// off) or refuses to start (active without grants).
		config.EnvMode: *mode, config.EnvGrants: *grants,
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(stdout, "# icekeeper local cloud on %s (task DLQ %s, commit DLQ %s)\n", cloud.URL, res.TaskDLQURL, res.CommitDLQURL)
	fmt.Fprintln(stdout, "# paste into another shell, then set ICEKEEPER_CATALOG_* and run icekeeper invoke / compact:")
	for _, k := range keys {
		fmt.Fprintf(stdout, "export %s=%q\n", k, env[k])
	}
	fmt.Fprintln(stdout, "# serving until interrupted (Ctrl-C)")
	<-ctx.Done()
	return nil
}
