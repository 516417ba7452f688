// What the model weighed at one generated position (issue 32): a small floating bar list of the
// token's alternatives, most likely first, each with its text, a bar as long as its probability
// and its log-probability, the chosen token marked. Shown on hover by the request board's detail
// pane and the comparison columns; clicking an alternative asks for a fork from that position.
#pragma once

#include <QTimer>
#include <QWidget>

#include "engine_link/bridge_events.h"

namespace lorascope::ui {

class AlternativesPopup : public QWidget {
    Q_OBJECT
public:
    // `owner`: the view it belongs to (a tool-tip window, owned by it).
    explicit AlternativesPopup(QWidget* owner);

    // Shows the alternatives of generated token `position` (from 0) just below `anchor` (global).
    void showToken(const StreamedToken& token, int position, const QRect& anchor);
    // Hides the popup soon unless the mouse is over it (the mouse crossing from the token to it).
    void hideSoon();
    int position() const { return position_; }
    int rowCount() const { return int(alternatives_.size()); }
    QRect rowRect(int row) const;
    int rowAt(const QPoint& pos) const;
    QString rowText(int row) const;   // what row `row` says, for tests and accessibility
    bool isChosenRow(int row) const;
    bool forkable(int row) const;
    QSize sizeHint() const override;

Q_SIGNALS:
    void alternativeChosen(int position, const lorascope::TokenAlternative& choice);

protected:
    void paintEvent(QPaintEvent*) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void mouseReleaseEvent(QMouseEvent* e) override;
    void leaveEvent(QEvent*) override;

private:
    int rowHeight() const;
    int headerHeight() const;
    std::vector<TokenAlternative> alternatives_;
    int64_t chosen_id_ = -1;
    std::string chosen_text_;   // the chosen row by text when ids are unknown (OpenAI's top_logprobs: -1)
    QString header_;
    int position_ = -1;
    int hovered_ = -1;
    int text_width_ = 0;
    QTimer hide_timer_;
};

}  // namespace lorascope::ui
