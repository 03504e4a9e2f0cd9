//! Errors of a run: user errors (bad inputs, parameters or regions) and
//! compiler bugs (malformed IR) are different types.

use std::fmt;

/// The IR handed to the interpreter breaks an invariant the front end
/// guarantees (unknown name, mismatched types, wrong arity...). Seeing one
/// is a bug in whatever built the pipeline, not in the user's program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IrBug(pub String);

impl fmt::Display for IrBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "internal error (malformed IR): {}", self.0)
    }
}

/// A stage read an input outside the region the caller provided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputTooSmall {
    /// The func whose definition reads the input.
    pub stage: String,
    pub input: String,
    /// Dimension names, as declared.
    pub dim_names: Vec<String>,
    /// Inclusive `(min, max)` per dimension of everything the stage read
    /// (the bounding box of reads inside and outside the input).
    pub needed: Vec<(i64, i64)>,
    /// Inclusive `(min, max)` per dimension of the buffer given.
    pub available: Vec<(i64, i64)>,
}

impl fmt::Display for InputTooSmall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ranges = |r: &[(i64, i64)]| {
            r.iter()
                .zip(&self.dim_names)
                .map(|((lo, hi), n)| format!("{n} from {lo} to {hi}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        write!(
            f,
            "stage `{}` reads input `{}` outside the region provided: it needs {}, but the input covers {} (add a boundary condition such as repeat_edge({}), or pass a larger input)",
            self.stage,
            self.input,
            ranges(&self.needed),
            ranges(&self.available),
            self.input
        )
    }
}

/// Why a run failed.
#[derive(Clone, Debug, PartialEq)]
pub enum RunError {
    /// No buffer was given for a declared input.
    MissingInput { input: String },
    /// A buffer was given under a name the pipeline does not declare.
    UnknownInput { input: String },
    /// A buffer's element type differs from the declaration.
    InputType {
        input: String,
        expected: String,
        found: String,
    },
    /// A buffer's dimensionality differs from the declaration.
    InputDimensions {
        input: String,
        expected: usize,
        found: usize,
    },
    /// A value was given for an undeclared parameter.
    UnknownParam { param: String },
    /// A parameter without default was not given a value.
    MissingParam { param: String },
    /// A parameter value outside its declared range or its type's range,
    /// or a float given for an integer parameter.
    BadParam { param: String, message: String },
    /// The requested region does not fit an output.
    BadRegion { message: String },
    /// One or more stages read inputs outside the regions given.
    InputTooSmall(Vec<InputTooSmall>),
    /// Evaluation needed more memory or recursion than allowed.
    ResourceLimit { message: String },
    /// A construct the reference interpreter does not evaluate.
    Unsupported { message: String },
    /// The pipeline's IR is malformed: a bug in whatever produced it.
    Bug(IrBug),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::MissingInput { input } => write!(f, "no image was given for input `{input}`"),
            RunError::UnknownInput { input } => {
                write!(f, "the pipeline has no input named `{input}`")
            }
            RunError::InputType {
                input,
                expected,
                found,
            } => {
                write!(
                    f,
                    "input `{input}` is declared {expected} but the image given is {found}"
                )
            }
            RunError::InputDimensions {
                input,
                expected,
                found,
            } => write!(
                f,
                "input `{input}` is declared with {expected} dimension(s) but the image given has {found}"
            ),
            RunError::UnknownParam { param } => {
                write!(f, "the pipeline has no parameter named `{param}`")
            }
            RunError::MissingParam { param } => {
                write!(
                    f,
                    "parameter `{param}` has no default, so a value must be given"
                )
            }
            RunError::BadParam { param, message } => {
                write!(f, "bad value for parameter `{param}`: {message}")
            }
            RunError::BadRegion { message } => write!(f, "bad output region: {message}"),
            RunError::InputTooSmall(list) => {
                for (i, e) in list.iter().enumerate() {
                    if i > 0 {
                        writeln!(f)?;
                    }
                    write!(f, "{e}")?;
                }
                Ok(())
            }
            RunError::ResourceLimit { message } => write!(f, "{message}"),
            RunError::Unsupported { message } => {
                write!(f, "not supported by the reference interpreter: {message}")
            }
            RunError::Bug(b) => write!(f, "{b}"),
        }
    }
}

impl std::error::Error for RunError {}

impl From<IrBug> for RunError {
    fn from(b: IrBug) -> RunError {
        RunError::Bug(b)
    }
}
