from django.contrib.auth import views as auth_views
from django.urls import path

from portal.accounts import views

urlpatterns = [
    path("accounts/signup/", views.signup, name="signup"),
    path("accounts/login/", views.login_view, name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/token/", views.token, name="account-token"),
    path("accounts/token/new/", views.token_regenerate, name="account-token-regenerate"),
]
