package stage

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/tracing"
)

// Init builds the shared dependencies for a function that needs the
// resources needs returns for the configuration (they depend on the mode),
// or exits the process with the reason logged.
func Init(ctx context.Context, function string, needs func(config.Config) []config.Need) (*Deps, *slog.Logger) {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil)).With("function", function)
	if limit, err := SetMemoryLimit(os.Getenv); err != nil {
		Fail(log, "memory limit", err)
	} else if limit > 0 {
		log.Info("Go memory limit set from the function's memory", "gomemlimit_bytes", limit)
	}
	cfg, err := config.FromEnv()
	if err != nil {
		Fail(log, "configuration", err)
	}
	clients, err := awsclients.Load(ctx, tracing.FromEnv().InstrumentAWS)
	if err != nil {
		Fail(log, "AWS configuration", err)
	}
	log = log.With("mode", string(cfg.Mode))
	deps, err := New(cfg, clients, log, needs(cfg)...)
	if err != nil {
		Fail(log, "configuration", err)
	}
	return deps, log
}

// ActiveOnly returns need in mode active and nothing otherwise: the
// rewriter and the committer only work in mode active.
func ActiveOnly(need []config.Need) func(config.Config) []config.Need {
	return func(c config.Config) []config.Need {
		if c.Mode == config.ModeActive {
			return need
		}
		return nil
	}
}

// IdleUnlessActive serves the Idle handler, and never returns, when the
// configured mode is not active: the rewriter and the committer only work
// in mode active.
func IdleUnlessActive(deps *Deps, log *slog.Logger, function string) {
	if deps.Config.Mode != config.ModeActive {
		lambda.Start(Idle{Function: function, Mode: string(deps.Config.Mode), Log: log}.Handle)
	}
}

// Fail logs why the function cannot start and exits.
func Fail(log *slog.Logger, what string, err error) {
	log.Error("cannot start: "+what, "err", err.Error())
	os.Exit(1)
}
