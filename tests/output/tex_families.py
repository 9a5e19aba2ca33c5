"""Issue 26, class 1: TeX in cell output that defines or assembles commands — the payload families.

Each family is TeX that JupyterLab's MathJax 3 (every package loaded, as JupyterLab loads them) typesets as a
styled box, a link, an overlay or a new command, without the neutraliser's old list of names ever appearing:
mathtools' paired delimiters replace `\\delimsize` in their body, as text, by the size the call gives, so
`\\delimsizebox` with the size `\\fcolor` is `\\fcolorbox`; the definers (`\\newcommand`, `\\def`, `\\let`,
`\\newenvironment`, `\\newtagform`, `\\Newextarrow`, `\\DeclareMathOperator`…) make names of their own; other
commands draw, move or load. `STYLED_BEFORE` are those that MathJax typeset styled through the old neutraliser
(seen with tests/browser/mathjax_probe.mjs, 2026-12-07). Shared by the in-process, kernel and browser tests.
"""

from __future__ import annotations

FAMILIES: dict[str, str] = {
    "paired_delimiter_x_delimsize": (
        r"$\DeclarePairedDelimiterX{\fin}[1]{.}{.}{\delimsizebox{green}{white}{#1}}"
        r"\fin[\fcolor]{FINAL ANSWER}$"
    ),
    "paired_delimiter_xpp_delimsize": (
        r"$\DeclarePairedDelimiterXPP{\fin}[1]{}{.}{.}{}{\delimsizebox{green}{white}{#1}}"
        r"\fin[\fcolor]{FINAL ANSWER}$"
    ),
    "paired_delimiter_bbox_pieces": (
        r"$\DeclarePairedDelimiterX{\fin}[1]{.}{.}{\delimsizex[lightgreen,border:2px solid green]{#1}}"
        r"\fin[\bbo]{FINAL ANSWER}$"
    ),
    "paired_delimiter_style_pieces": (
        r"$\DeclarePairedDelimiterX{\fin}[1]{.}{.}{\delimsizee{border:3px solid green;padding:4px}{#1}}"
        r"\fin[\styl]{FINAL ANSWER}$"
    ),
    "paired_delimiter_href_pieces": (
        r"$\DeclarePairedDelimiterX{\fin}[1]{.}{.}{\delimsizef{https://example.org}{#1}}"
        r"\fin[\hre]{FINAL ANSWER}$"
    ),
    "paired_delimiter_enclose_pieces": (
        r"$\DeclarePairedDelimiterX{\fin}[1]{.}{.}{\delimsizee{box}[mathcolor=green]{#1}}\fin[\enclos]{FINAL}$"
    ),
    "paired_delimiter_defines_noise_away": (
        r"$\DeclarePairedDelimiter{\fcolorl}{}{}\DeclarePairedDelimiter{\fcolorr}{}{}"
        r"\DeclarePairedDelimiterX{\fin}[1]{}{}{\delimsizebox{green}{white}{#1}}\fin[\fcolor]{FINAL ANSWER}$"
    ),
    "paired_delimiter_plain": r"$\DeclarePairedDelimiter{\fin}{\lvert}{\rvert}\fin*{\text{FINAL ANSWER}}$",
    "newcommand_argument": r"$\newcommand{\fin}[1]{\fcolorbox{green}{white}{#1}}\fin{FINAL ANSWER}$",
    "renewcommand": r"$\renewcommand{\fin}{\color{green}}\fin FINAL$",
    "def_parameters": r"$\def\fin#1{\bbox[green]{#1}}\fin{FINAL ANSWER}$",
    "let_alias": r"$\let\fin=\boxed\fin{FINAL ANSWER}$",
    "newenvironment": (
        r"$\newenvironment{fin}{\style{border:2px solid green}\bgroup}{\egroup}\begin{fin}F\end{fin}$"
    ),
    "newtagform": r"$$\newtagform{fin}[\textcolor{green}]{[}{]}\usetagform{fin}x\tag{FINAL ANSWER}$$",
    "newextarrow": r"$\Newextarrow{\fin}{5,5}{0x2192}\fin{FINAL ANSWER}$",
    "declare_math_operator": r"$\DeclareMathOperator{\fin}{FINAL}\fin$",
    "require_extension": r"$\require{action}\toggle{FINAL}{x}\endtoggle$",
    "begingroup_global": r"$\begingroup\gdef\fin{\color{green}FINAL}\endgroup\fin$",
    "csname_pieces": r"$\csname fcolorbox\endcsname{green}{white}{FINAL}$",
    "empheq_box": r"$\begin{empheq}[box=\fbox]{align}a&=b\end{empheq}$",
    "environment_without_delimiters": r"\begin{empheq}[box=\boxed]{align}FINAL&=42\end{empheq}",
    "array_borders": r"$\begin{array}{|c|}\hline \text{FINAL ANSWER}\\\hline\end{array}$",
    "colortbl_cell": r"$\begin{array}{c}\cellcolor{lightgreen}\text{FINAL ANSWER}\end{array}$",
    "mhchem": r"$\ce{\color{green}FINAL}$",
    "textmacros_nested": r"$\text{\textcolor{green}{FINAL}}$",
    "html_class_data": r"$\class{jp-RenderedHTMLCommon}{\cssId{x}{\data{a=1}{FINAL}}}$",
    "unicode_mmltoken": r"$\unicode[style=border:2px solid green]{x46}\mmlToken{mi}[mathcolor=green]{F}$",
    "kern_rule_overlay": r"$\kern-40em\rlap{\rule{30em}{3em}}\raise2em{\Huge FINAL}$",
    "setoptions": r"$\setOptions[tex]{maxMacros=10000}\fcolorbox{green}{white}{F}$",
    "display_math_brackets": (
        r"\[\DeclarePairedDelimiterX{\fin}[1]{.}{.}{\delimsizebox{green}{white}{#1}}\fin[\fcolor]{F}\]"
    ),
}

STYLED_BEFORE = (
    "paired_delimiter_x_delimsize",
    "paired_delimiter_xpp_delimsize",
    "paired_delimiter_bbox_pieces",
    "paired_delimiter_style_pieces",
    "paired_delimiter_href_pieces",
    "paired_delimiter_enclose_pieces",
    "kern_rule_overlay",
    "display_math_brackets",
)

# names that define, assemble, style, link, move, draw or load: none may stay a command MathJax runs
ACTIVE = frozenset(
    """
    DeclarePairedDelimiter DeclarePairedDelimiterX DeclarePairedDelimiterXPP delimsize newcommand renewcommand
    def gdef edef xdef let global newenvironment renewenvironment newtagform usetagform Newextarrow
    DeclareMathOperator require begingroup endgroup csname endcsname setOptions fcolorbox colorbox color
    textcolor definecolor bbox boxed fbox framebox style class cssId data href url enclose unicode mmlToken
    toggle mathtip texttip cellcolor rowcolor columncolor kern rlap llap rule raise lower Huge huge ce hline
    negthinspace negmedspace negthickspace hspace mkern mskip hskip mspace
    fin fcolor delimsizebox bbo styl hre enclos
    """.split()
)

# ordinary math a person's (and the kernel's) output keeps typeset
HONEST = (
    r"$\frac{1}{2} + \alpha^2 \le \sqrt{\beta}$",
    r"$$\sum_{i=1}^{n} x_i = \int_0^1 f(t)\,dt$$",
    r"\begin{pmatrix} a & b \\ c & d \end{pmatrix}",
    r"$\mathbb{R} \to \mathcal{O}(n \log n)$, \(\left\lvert x \right\rvert\)",
    r"$\begin{aligned} y &= mx + b \\ \hat{y} &\approx \bar{x} \end{aligned}$",
)
