package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/orphans"
)

// runRemoveOrphans removes TABLE's orphan files as an orphan cleanup job
// through the pipeline, or, with --dry-run, lists what would be removed.
// --older-than sets the safety age (default: the table's
// icekeeper.orphans.older-than, else 72h; never under 24h).
func runRemoveOrphans(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	olderThan, args, err := takeDuration(args, "older-than")
	if err != nil {
		return exitError{code: 2, err: err}
	}
	for _, a := range args {
		if a == "--dry-run" || a == "-dry-run" {
			return runOrphansDryRun(ctx, args, olderThan, stdout, stderr)
		}
	}
	return runJob(ctx, "remove-orphans", args, stdout, stderr, localrun.RunOrphanCleanup(olderThan))
}

// takeDuration removes --name D (or --name=D) from args and parses D.
func takeDuration(args []string, name string) (time.Duration, []string, error) {
	var d time.Duration
	var rest []string
	for i := 0; i < len(args); i++ {
		a := strings.TrimLeft(args[i], "-")
		v, ok := "", false
		switch {
		case a == name && i+1 < len(args) && strings.HasPrefix(args[i], "-"):
			v, ok = args[i+1], true
			i++
		case strings.HasPrefix(a, name+"=") && strings.HasPrefix(args[i], "-"):
			v, ok = strings.TrimPrefix(a, name+"="), true
		}
		if !ok {
			rest = append(rest, args[i])
			continue
		}
		var err error
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			return 0, nil, fmt.Errorf("--%s %q: want a positive duration such as 72h", name, v)
		}
	}
	return d, rest, nil
}

func runOrphansDryRun(ctx context.Context, args []string, olderThan time.Duration, stdout, stderr io.Writer) error {
	fs := newFlagSet("remove-orphans", stderr)
	fs.Bool("dry-run", true, "only list what would be removed")
	fs.Bool("local", false, "(with --dry-run: unused)")
	fs.Bool("q", false, "(with --dry-run: unused)")
	fs.Bool("v", false, "(with --dry-run: unused)")
	asJSON := addOutputFlags(fs, "the listing")
	cf := addCatalogFlags(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	name, _, tbl, err := cf.loadOneTable(ctx, "remove-orphans", pos)
	if err != nil {
		return err
	}
	age, err := optin.OrphanAge(tbl.Properties(), olderThan)
	if err != nil {
		return exitError{code: 2, err: err}
	}
	found, err := orphans.Find(ctx, tbl, orphans.Prefix{}, time.Now().Add(-age))
	if err == nil {
		// The catalog's tables are listed to rule out one inside the
		// location, as the committer does.
		_, cat, cerr := cf.openCatalog(ctx, false)
		if cerr != nil {
			return cerr
		}
		err = orphans.Shared(ctx, tbl, found.Metadata, cat)
	}
	var why string
	if errors.Is(err, orphans.ErrRefused) {
		why, err = orphans.Why(err), nil
	}
	if err != nil {
		return err
	}
	paths, bytes := orphans.Paths(found.Orphans)
	deletable, elsewhere := orphans.Deletable(tbl.Location(), paths, nil)
	out := map[string]any{"table": name, "older_than": age.String(), "remove": deletable, "left_alone": elsewhere, "bytes": bytes, "refused": why}
	if *asJSON {
		return printJSON(stdout, out)
	}
	if why != "" {
		fmt.Fprintf(stdout, "table %s: orphan cleanup refused: %s\n", name, why)
		return exitError{code: exitSkipped, err: errors.New("refused: " + why), reported: true}
	}
	fmt.Fprintf(stdout, "table %s: %d orphan files older than %s would be removed", name, len(deletable), age)
	if len(elsewhere) > 0 {
		fmt.Fprintf(stdout, ", %d outside data/ and metadata/ left alone", len(elsewhere))
	}
	fmt.Fprintln(stdout)
	for _, p := range deletable {
		fmt.Fprintf(stdout, "  %s\n", p)
	}
	fmt.Fprintln(stdout, "dry run: nothing was removed")
	if len(deletable) == 0 {
		return exitError{code: exitNothingToDo, err: errors.New("nothing to do: no orphan file"), reported: true}
	}
	return nil
}
