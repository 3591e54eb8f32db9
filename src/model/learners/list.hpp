// The learners the linear scorer can use, one line each; the first is the
// default. A learner is its file in this folder, defining `const Learner&
// NAME()` in mailsift::model (one instance, whose name() `linear_learner`
// takes), and its line here: CMake compiles every file of the folder, and
// learner.cpp declares and lists what this names. No include guard: it is
// read once per use, with MAILSIFT_LEARNER defined by the reader.
MAILSIFT_LEARNER(logistic_regression)
MAILSIFT_LEARNER(passive_aggressive)
