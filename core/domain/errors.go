package domain

import (
	"errors"
	"fmt"
)

// ErrInput marks input a person typed that is not valid; match it with
// errors.Is. The error's own message says what is wrong.
var ErrInput = errors.New("invalid input")

type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

func (e *inputError) Is(target error) bool { return target == ErrInput }

func InputErr(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...)}
}

// Refusals of fair sharing, each wrapped with the limit, the figure and
// when it frees.
var (
	ErrQuota       = errors.New("over your quota")
	ErrTooFarAhead = errors.New("starts further ahead than the policy allows")
	ErrLeftLine    = errors.New("left the waiting line without a booking")
	ErrNoRequest   = errors.New("no such waiting request")
)

// Errors callers can tell apart; each is wrapped with a message that says
// the particulars.
var (
	ErrOverbooked   = errors.New("not enough free share on that GPU")
	ErrNotOwner     = errors.New("not your booking")
	ErrNotRoot      = errors.New("only root may do that")
	ErrNotLive      = errors.New("booking has ended")
	ErrNoPartition  = errors.New("no such booking")
	ErrNoDevice     = errors.New("no such GPU")
	ErrTooLong      = errors.New("longer than the policy allows")
	ErrUnknownUser  = errors.New("no such user")
	ErrUnknownGroup = errors.New("no such group")
	ErrOtherHost    = errors.New("that GPU is on another host")
	ErrMemoryInUse  = errors.New("not enough memory physically free on that GPU")
	ErrNeedDevices  = errors.New("no device inventory cached")
)
