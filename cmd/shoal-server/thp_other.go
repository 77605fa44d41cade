//go:build !linux

package main

import (
	"github.com/shoal-db/shoal/config"
	"go.uber.org/zap"
)

// disableTHP: transparent huge pages are a Linux feature.
func disableTHP(*config.Config, *zap.Logger) {}
