package desktop

// MoveFile is what SetMoveHooks' create returns (an *os.File, or a disk that fills).
type MoveFile = moveFile

// SetMoveHooks replaces the move's rename and create (nil keeps os.Rename and os.Create): a
// rename failing with EXDEV makes the move copy, as between two disks.
func SetMoveHooks(c *Controller, rename func(oldpath, newpath string) error, create func(name string) (MoveFile, error)) {
	c.move = mover{rename: rename, create: create}
}
