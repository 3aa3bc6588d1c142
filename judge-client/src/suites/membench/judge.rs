//! The optional model judge (`--judge-endpoint`): LongMemEval's accuracy, defined by its authors
//! with a model judge and one prompt per question type (their `evaluate_qa.py`: temperature 0,
//! at most 10 tokens, "yes" anywhere in the reply is a pass), and LoCoMo's "J" score as Mem0's
//! paper defines it (its `llm_judge.py` prompt; the JSON `label` CORRECT or WRONG; category 5 not
//! judged). The prompts and the readings of the answers are here; the model is asked through
//! [`crate::suites::model_judge`], which retries unreadable answers and makes a failed call or
//! an answer that stays unreadable a `judge_error`.

use serde::{Deserialize, Serialize};

use crate::suites::model_judge::json_object;

/// One verdict of the judge model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub correct: bool,
    /// The judge's reply as it came.
    pub reply: String,
}

const ANSWER_CHECK: &str = "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response is equivalent to the correct answer or contains all the intermediate steps to get the correct answer, you should also answer yes. If the response only contains a subset of the information required by the answer, answer no.";

/// LongMemEval's judge prompt for a question of `question_type`.
pub fn longmemeval_prompt(
    question_type: &str,
    abstention: bool,
    question: &str,
    answer: &str,
    response: &str,
) -> String {
    if abstention {
        return format!(
            "I will give you an unanswerable question, an explanation, and a response from a model. Please answer yes if the model correctly identifies the question as unanswerable. The model could say that the information is incomplete, or some other information is given but the asked information is not.\n\nQuestion: {question}\n\nExplanation: {answer}\n\nModel Response: {response}\n\nDoes the model correctly identify the question as unanswerable? Answer yes or no only."
        );
    }
    let (instructions, answer_label) = match question_type {
        "temporal-reasoning" => (
            format!(
                "{ANSWER_CHECK} In addition, do not penalize off-by-one errors for the number of days. If the question asks for the number of days/weeks/months, etc., and the model makes off-by-one errors (e.g., predicting 19 days when the answer is 18), the model's response is still correct. "
            ),
            "Correct Answer",
        ),
        "knowledge-update" => (
            "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no. If the response contains some previous information along with an updated answer, the response should be considered as correct as long as the updated answer is the required answer.".to_owned(),
            "Correct Answer",
        ),
        "single-session-preference" => (
            "I will give you a question, a rubric for desired personalized response, and a response from a model. Please answer yes if the response satisfies the desired response. Otherwise, answer no. The model does not need to reflect all the points in the rubric. The response is correct as long as it recalls and utilizes the user's personal information correctly.".to_owned(),
            "Rubric",
        ),
        _ => (format!("{ANSWER_CHECK} "), "Correct Answer"),
    };
    format!(
        "{instructions}\n\nQuestion: {question}\n\n{answer_label}: {answer}\n\nModel Response: {response}\n\nIs the model response correct? Answer yes or no only."
    )
}

/// Mem0's LLM-judge prompt for LoCoMo's "J" score.
pub fn locomo_j_prompt(question: &str, gold: &str, generated: &str) -> String {
    format!(
        "Your task is to label an answer to a question as 'CORRECT' or 'WRONG'. You will be given the following data:\n    (1) a question (posed by one user to another user),\n    (2) a 'gold' (ground truth) answer,\n    (3) a generated answer\nwhich you will score as CORRECT/WRONG.\n\nThe point of the question is to ask about something one user should know about the other user based on their prior conversations.\nThe gold answer will usually be a concise and short answer that includes the referenced topic, for example:\nQuestion: Do you remember what I got the last time I went to Hawaii?\nGold answer: A shell necklace\nThe generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT.\n\nFor time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like \"last Tuesday\" or \"next month\"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., \"May 7th\" vs \"7 May\"), consider it CORRECT if it's the same date.\n\nNow it's time for the real question:\nQuestion: {question}\nGold answer: {gold}\nGenerated answer: {generated}\n\nFirst, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG.\nDo NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.\n\nJust return the label CORRECT or WRONG in a json format with the key as \"label\".\n"
    )
}

/// LongMemEval's reading of a verdict: "yes" anywhere, case-insensitive, is a pass, as its
/// authors read it; otherwise a reply that says "no" is a fail, and one that says neither cannot
/// be read (asked again, then a `judge_error`: see [`crate::suites::model_judge`]).
pub fn parse_yes_no(reply: &str) -> Result<bool, String> {
    let lower = reply.to_lowercase();
    if lower.contains("yes") {
        return Ok(true);
    }
    if lower
        .split(|c: char| !c.is_alphanumeric())
        .any(|word| word == "no")
    {
        return Ok(false);
    }
    Err("neither yes nor no".to_owned())
}

/// Mem0's reading: the JSON object's `label`, CORRECT or WRONG. A reply without a JSON object
/// is read by its last word CORRECT or WRONG; a reply with neither cannot be read (asked again,
/// then a `judge_error`), never a verdict of WRONG.
pub fn parse_label(reply: &str) -> Result<bool, String> {
    let label = |text: &str| match text.trim().to_uppercase().as_str() {
        "CORRECT" => Some(true),
        "WRONG" => Some(false),
        _ => None,
    };
    if let Some(object) = json_object(reply)
        && let Some(value) = object.get("label").and_then(|l| l.as_str())
    {
        return label(value).ok_or_else(|| format!("label {value:?} is not CORRECT or WRONG"));
    }
    reply
        .split(|c: char| !c.is_alphabetic())
        .rev()
        .find_map(label)
        .ok_or_else(|| "no label CORRECT or WRONG".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_per_question_type() {
        let p = longmemeval_prompt("temporal-reasoning", false, "Q?", "18 days", "19 days");
        assert!(p.contains("off-by-one"));
        assert!(p.ends_with("Is the model response correct? Answer yes or no only."));
        let p = longmemeval_prompt("single-session-preference", false, "Q?", "likes tea", "r");
        assert!(p.contains("Rubric: likes tea"));
        let p = longmemeval_prompt("multi-session", true, "Q?", "never said", "r");
        assert!(p.contains("unanswerable"));
        let p = locomo_j_prompt("Q?", "Lisbon", "She moved to Lisbon.");
        assert!(p.contains("Gold answer: Lisbon\nGenerated answer: She moved to Lisbon."));
    }

    #[test]
    fn verdicts_are_read_as_their_authors_read_them() {
        assert_eq!(parse_yes_no("Yes."), Ok(true));
        assert_eq!(parse_yes_no("No"), Ok(false));
        assert_eq!(parse_yes_no("no, it does not"), Ok(false));
        assert_eq!(
            parse_label(r#"The answer matches. {"label": "CORRECT"}"#),
            Ok(true)
        );
        assert_eq!(parse_label(r#"{"label": "WRONG"}"#), Ok(false));
        assert_eq!(parse_label("Same city. CORRECT"), Ok(true));
        assert_eq!(parse_label("It names another city, so WRONG"), Ok(false));
    }

    #[test]
    fn an_answer_without_a_verdict_cannot_be_read() {
        assert!(parse_yes_no("Not sure; it depends.").is_err());
        assert!(parse_yes_no("%%%###").is_err());
        assert!(parse_label("no label").is_err());
        assert!(parse_label("INCORRECT-ish noise").is_err());
        assert!(parse_label(r#"{"label": "MAYBE"}"#).is_err());
    }
}
