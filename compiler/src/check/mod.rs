//! Name resolution, type checking and stratification (in progress).
