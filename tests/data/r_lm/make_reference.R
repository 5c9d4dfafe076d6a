# Reference values for perfmod.regression from R's lm, anova and predict (tests/test_regression_r.py).
# Run from this directory:  Rscript make_reference.R
# Writes reference_*.csv (numbers as %.17g) and summary_C.txt; every file names the R version in its header.
# CI has no R: the files this script wrote are the reference, committed with it.
options(warn = 1)
d <- read.csv("data.csv", comment.char = "#")
nd <- read.csv("newdata.csv", comment.char = "#")
models <- list(
  A = y ~ X1 + I(X1^2) + X2 + X3,          # paper 001 §5.1.2 Model A
  B = y ~ (X1 + I(X1^2)) * X2,             # Model B
  C = y ~ (X1 + I(X1^2)) * X2 * X3,        # Model C (Tables 1, 3)
  D = y ~ (X1 + X2 + X3)^2,                # crossing operator
  E = y ~ X2:X1 + X3 + X1,                 # term order and interaction naming
  F = y ~ X1 + X2 - 1,                     # no intercept (uncentred R^2, F on p df)
  G = log(y) ~ X1 + I(1/X1) + X2,          # log response, I() with division
  H = y ~ X1 + I(X1^2),                    # nested in B and C
  I = y ~ X1 * gpu + I(X1^2),              # a factor: treatment contrasts (gpuP100), R's term order
  J = y ~ .                                # every other column
)
fits <- lapply(models, lm, data = d)
ver <- R.version.string
g <- function(x) sprintf("%.17g", x)
header <- function(file, what) {
  con <- file(file, "w")
  writeLines(c(paste0("# ", what), paste0("# Made by tests/data/r_lm/make_reference.R with ", ver)), con)
  con
}
put <- function(df, file, what) {
  con <- header(file, what)
  write.csv(df, con, row.names = FALSE, quote = TRUE)
  close(con)
}

coef_rows <- do.call(rbind, lapply(names(fits), function(m) {
  s <- coef(summary(fits[[m]]))
  data.frame(model = m, formula = deparse(models[[m]]), term = rownames(s), estimate = g(s[, 1]),
             std_error = g(s[, 2]), t_value = g(s[, 3]), p_value = g(s[, 4]))
}))
put(coef_rows, "reference_coefficients.csv", "summary(lm)$coefficients per model, rows in R's order")

fit_rows <- do.call(rbind, lapply(names(fits), function(m) {
  s <- summary(fits[[m]])
  f <- s$fstatistic
  data.frame(model = m, sigma = g(s$sigma), df_resid = fits[[m]]$df.residual, rss = g(deviance(fits[[m]])),
             r_squared = g(s$r.squared), adj_r_squared = g(s$adj.r.squared), fstat = g(f[1]),
             f_df1 = f[2], f_df2 = f[3], f_pvalue = g(pf(f[1], f[2], f[3], lower.tail = FALSE)))
}))
put(fit_rows, "reference_fit.csv", "sigma, df.residual, deviance, r.squared, adj.r.squared, fstatistic and its p-value")

an <- function(label, a) {
  data.frame(comparison = label, row = rownames(a), res_df = a[, "Res.Df"], rss = g(a[, "RSS"]),
             df = g(a[, "Df"]), sum_sq = g(a[, "Sum of Sq"]), f = g(a[, "F"]), p = g(a[, "Pr(>F)"]))
}
an_rows <- rbind(an("A,B,C", anova(fits$A, fits$B, fits$C)), an("H,B,C", anova(fits$H, fits$B, fits$C)),
                 an("C,H", anova(fits$C, fits$H)))
put(an_rows, "reference_anova.csv", "anova(m1, m2, ...) of several models (A is not nested in B: R computes it anyway)")

t1 <- function(m) {
  a <- anova(fits[[m]])
  data.frame(model = m, term = rownames(a), df = a[, "Df"], sum_sq = g(a[, "Sum Sq"]), mean_sq = g(a[, "Mean Sq"]),
             f = g(a[, "F value"]), p = g(a[, "Pr(>F)"]))
}
put(rbind(t1("C"), t1("D"), t1("E"), t1("I")), "reference_anova_type1.csv", "anova(m) of one model: sequential (Type-I) table")

pr <- function(m, interval, level) {
  p <- predict(fits[[m]], newdata = nd, interval = interval, level = level, se.fit = TRUE)
  data.frame(model = m, interval = interval, level = level, row = seq_len(nrow(nd)) - 1, fit = g(p$fit[, "fit"]),
             lwr = g(p$fit[, "lwr"]), upr = g(p$fit[, "upr"]), se_fit = g(p$se.fit))
}
put(rbind(pr("C", "confidence", 0.95), pr("C", "prediction", 0.95), pr("G", "confidence", 0.95),
          pr("G", "prediction", 0.9), pr("B", "prediction", 0.95), pr("I", "confidence", 0.99)),
    "reference_predict.csv", "predict(m, newdata, interval =, level =, se.fit = TRUE) on newdata.csv")

con <- header("summary_C.txt", "print(summary(lm(y ~ (X1 + I(X1^2)) * X2 * X3, data = d)))")
writeLines(capture.output(print(summary(lm(y ~ (X1 + I(X1^2)) * X2 * X3, data = d)))), con)
close(con)
con <- header("summary_null.txt", "print(summary(lm(y ~ 1, data = d))): no R^2 or F lines without terms")
writeLines(capture.output(print(summary(lm(y ~ 1, data = d)))), con)
close(con)
con <- header("anova_print.txt", "print(anova(H, B, C)); print(anova(A, B, C)); print(anova(C)); print(anova(C, H))")
writeLines(capture.output(print(anova(fits$H, fits$B, fits$C)), print(anova(fits$A, fits$B, fits$C)),
                          print(anova(fits$C)), print(anova(fits$C, fits$H))), con)
close(con)
